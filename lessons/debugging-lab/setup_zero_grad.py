import torch
from torch import nn

X = torch.randn(64, 3, device=DEVICE)
y = X @ torch.tensor([[1.0], [-2.0], [0.5]], device=DEVICE) + 0.1 * torch.randn(64, 1, device=DEVICE)


def make_model():
    torch.manual_seed(1)
    return nn.Linear(3, 1).to(DEVICE)
