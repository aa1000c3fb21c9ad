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
    return _autocast_asked_for_meta(lambda: autocast_forward(meta_model, meta_x, meta_y))


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


def _dtype_with_float16_default(autocast_forward):
    """For the checks: the logits' dtype when autocast's default dtype for the CPU is float16,
    on a CPU copy of the model: bfloat16 only if autocast_forward asks for it by name."""
    import copy

    get = getattr(torch, "get_autocast_dtype", None)
    put = getattr(torch, "set_autocast_dtype", None)
    if get is None or put is None:   # older torch: only the CPU functions
        get = lambda _dev: torch.get_autocast_cpu_dtype()  # noqa: E731
        put = lambda _dev, d: torch.set_autocast_cpu_dtype(d)  # noqa: E731
    m = copy.deepcopy(model).to("cpu")
    before = get("cpu")
    try:
        put("cpu", torch.float16)
    except Exception:
        return "not tested: this torch has no float16 autocast on the CPU"
    try:
        logits, _ = autocast_forward(m, x.to("cpu"), y.to("cpu"))
        return str(logits.dtype)
    except Exception as e:
        return f"raised {type(e).__name__}"
    finally:
        put("cpu", before)


def _loss_made_by(autocast_forward):
    """For the mistakes: the autograd node that made the loss, on a fresh call with a copy
    of model ('NllLossBackward0' straight from cross_entropy, 'ToCopyBackward0' after a cast)."""
    import copy

    try:
        _, loss = autocast_forward(copy.deepcopy(model), x, y)
        return type(loss.grad_fn).__name__
    except Exception:
        return None


def _linear_weights_used(fn):
    """For the checks: for each nn.Linear layer of a copy of model given to fn, whether its
    weight was used under autocast, and for which dtype (the lessons' shared prelude)."""
    return _weights_under_autocast(model, lambda m: fn(m, x, y))
