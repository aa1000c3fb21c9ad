import torch
from torch import nn

# Drawn on the CPU, then moved: the same data (and the same symptoms) on every device.
X = torch.randn(64, 3)
y = X @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.1 * torch.randn(64, 1)
X, y = X.to(DEVICE), y.to(DEVICE)


def make_model():
    torch.manual_seed(1)
    return nn.Linear(3, 1).to(DEVICE)
