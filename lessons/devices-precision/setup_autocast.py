import torch
from torch import nn

model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)).to(DEVICE)
x = torch.randn(4, 8, device=DEVICE)
y = torch.tensor([0, 2, 1, 2], device=DEVICE)


def _autocast_on_meta(autocast_forward):
    """For the checks: is autocast asked for the meta device when the data is on meta?"""
    meta_model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)).to("meta")
    meta_x = torch.empty(4, 8, device="meta")
    meta_y = torch.zeros(4, dtype=torch.long, device="meta")
    try:
        autocast_forward(meta_model, meta_x, meta_y)
    except RuntimeError as e:
        if "device_type 'meta'" in str(e):  # torch refuses autocast for meta: it was asked for x's device
            return "autocast asked for the meta device"
        raise
    return "autocast not asked for the meta device"


def _first_layer_dtype(autocast_forward):
    """For the mistakes: the dtype model[0]'s output has inside autocast_forward (on a copy of model)."""
    import copy

    m = copy.deepcopy(model)
    seen = []
    m[0].register_forward_hook(lambda mod, inp, out: seen.append(out.dtype))
    try:
        autocast_forward(m, x, y)
    except Exception:
        return None
    return seen[0] if seen else None
