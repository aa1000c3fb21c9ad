import math

import torch
from torch import nn

_SEED = 123  # the seed every probe starts its draws from


def _reset(layer):
    """nn.Linear's own initialisation, the reference the probes compare with."""
    layer.reset_parameters()


def _probe(init_fn, fan_in, fan_out):
    """A fresh Linear re-initialised by init_fn right after seeding: all its numbers, weight first."""
    layer = nn.Linear(fan_in, fan_out).to(DEVICE)
    torch.manual_seed(_SEED)
    init_fn(layer)
    return torch.cat([layer.weight.detach().flatten(), layer.bias.detach()])
