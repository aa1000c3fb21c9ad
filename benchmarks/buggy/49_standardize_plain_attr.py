# exercise: modules/standardize
# bug: mean/std stored as plain tensor attributes
# named-by: register_buffer
import torch
from torch import nn


class Standardize(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.mean = mean
        self.std = std
        self.gain = nn.Parameter(torch.ones_like(mean))

    def forward(self, x):
        return self.gain * (x - self.mean) / self.std


norm = Standardize(mean, std).to(DEVICE)
