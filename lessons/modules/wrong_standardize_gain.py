import torch
from torch import nn


class Standardize(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.register_buffer("mean", mean)
        self.register_buffer("std", std)
        self.gain = torch.ones_like(mean, requires_grad=True)

    def forward(self, x):
        return self.gain * (x - self.mean) / self.std


norm = Standardize(mean, std).to(DEVICE)
