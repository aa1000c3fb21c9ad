import torch
from torch import nn


class LoRALinear(nn.Module):
    def __init__(self, base, r):
        super().__init__()
        self.base = base
        self.base.requires_grad_(False)  # the pretrained weights stay as they are
        self.A = nn.Parameter(torch.randn(r, base.in_features) / base.in_features**0.5)
        self.B = nn.Parameter(torch.zeros(base.out_features, r))  # zero: starts as the base layer

    def forward(self, x):
        return self.base(x) + x @ self.A.T @ self.B.T
