import torch
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    """A body shared by two heads; forward(x) uses head a only."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Tanh())
        self.a = nn.Linear(8, 1)
        self.b = nn.Linear(8, 1)

    def forward(self, x):
        return self.a(self.body(x))


# one set of weights and one batch, drawn once; every probe starts from a fresh copy
_STATE = {k: v.clone() for k, v in Net().state_dict().items()}
_X, _YA, _YB = torch.randn(16, 4), torch.randn(16, 1), torch.randn(16, 1)


def _fresh():
    model = Net()
    model.load_state_dict(_STATE)
    return model


def _flat(model):
    return torch.cat([p.detach().flatten() for p in model.parameters()])
