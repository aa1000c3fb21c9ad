import math

import torch
from torch import nn


def _probe(init_fn, fan_in, fan_out):
    """A fresh Linear re-initialised by init_fn right after seeding: all its numbers, weight first."""
    layer = nn.Linear(fan_in, fan_out).to(DEVICE)
    torch.manual_seed(123)
    init_fn(layer)
    return torch.cat([layer.weight.detach().flatten(), layer.bias.detach()])
