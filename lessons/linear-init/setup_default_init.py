import math

import torch
from torch import nn
from torch.nn.modules.module import register_module_parameter_registration_hook

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


def parameters_made(init_fn):
    """How many parameters any module registered while init_fn re-initialised a fresh
    Linear: a module built inside it (a new nn.Linear registers its weight and bias) counts."""
    layer, made = nn.Linear(5, 3).to(DEVICE), []
    handle = register_module_parameter_registration_hook(lambda module, name, param: made.append(name))
    try:
        init_fn(layer)
    finally:
        handle.remove()
    return len(made)
