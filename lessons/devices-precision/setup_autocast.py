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
        if "unsupported scalarType" in str(e):  # newer torch, no dtype=: the default dtype of 'meta' was looked up
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
    """For the checks: autocast_forward called with a copy m of model; for each of m's
    nn.Linear layers, whether the operations that took its weight (the layer's own forward,
    called any way, or a functional call given the weight) ran under autocast, and for
    which dtype."""
    import copy

    from torch.overrides import TorchFunctionMode

    m = copy.deepcopy(model)
    layers = [layer for layer in m.modules() if isinstance(layer, nn.Linear)]
    uses = {id(layer.weight): set() for layer in layers}

    class _Watch(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            for a in (*args, *kwargs.values()):
                if isinstance(a, torch.Tensor) and id(a) in uses:
                    dev = a.device.type
                    if torch.is_autocast_enabled(dev):
                        uses[id(a)].add("under " + str(torch.get_autocast_dtype(dev)).replace("torch.", "") + " autocast")
                    else:
                        uses[id(a)].add("outside autocast")
            return func(*args, **kwargs)

    try:
        with _Watch():
            fn(m, x, y)
    except Exception as e:
        return f"raised {type(e).__name__}"
    return [
        "used " + " and ".join(sorted(uses[id(layer.weight)])) if uses[id(layer.weight)] else "not used"
        for layer in layers
    ]
