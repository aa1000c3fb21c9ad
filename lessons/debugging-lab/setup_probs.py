import torch
from torch import nn

centers = torch.tensor([[2.0, 0.0], [-1.0, 1.7], [-1.0, -1.7]])
y = torch.arange(3).repeat_interleave(30)
X = centers[y] + 0.4 * torch.randn(90, 2)
X, y = X.to(DEVICE), y.to(DEVICE)


def make_model():
    torch.manual_seed(1)
    return nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 3)).to(DEVICE)
