import torch
from torch import nn


def _make():
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 3))


# one set of weights and inputs, drawn once; every probe starts from a fresh copy
_STATE = {k: v.clone() for k, v in _make().state_dict().items()}
_X = torch.randn(5, 4)
_X2 = torch.randn(5, 4)
_S = 0.5 + torch.rand(()).item()


def _fresh():
    model = _make()
    model.load_state_dict(_STATE)
    return model


def _loss(model, x):
    return (model(x) ** 2).sum()
