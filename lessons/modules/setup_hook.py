import torch
from torch import nn
from collections import OrderedDict

model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).to(DEVICE)
x = torch.randn(5, 4, device=DEVICE)
shapes = []

_HOOK_LOG = []


class _ForwardHookLog(OrderedDict):
    """For the checks: model's forward hooks, recording each one registered, each run (and
    how many entries it added to shapes) and each removed, as the handle does them."""

    def __setitem__(self, key, fn):
        if key in self:  # torch stores each hook once; only a move can come here again
            return super().__setitem__(key, fn)

        def run(module, *args):
            before = len(shapes)
            result = fn(module, *args)
            _HOOK_LOG.append(f"the forward hook ran; shapes grew by {len(shapes) - before}")
            return result

        _HOOK_LOG.append("a forward hook registered on model")
        super().__setitem__(key, run)

    def __delitem__(self, key):
        _HOOK_LOG.append("a forward hook removed from model")
        super().__delitem__(key)


model._forward_hooks = _ForwardHookLog()


def _hook_events():
    """For the checks: what happened to model's forward hooks while the code ran."""
    return list(_HOOK_LOG)


def _hooks_left():
    """For the checks: how many hooks of each kind model still has."""
    kinds = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")
    return {kind.strip("_"): len(getattr(model, kind)) for kind in kinds}


def _appended_by_another_call():
    """For the checks: how many entries one more call of model adds to shapes (taken back)."""
    before = len(shapes)
    with torch.no_grad():
        model(x)
    added = len(shapes) - before
    del shapes[before:]
    return added
