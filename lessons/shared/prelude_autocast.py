import torch


# The checks' helpers for the autocast exercises of two lessons (devices-precision,
# mixed-precision): which dtype each layer's weight was used in, and whether autocast was
# asked for the data's own device.
_NOT_USES = frozenset(
    ("__get__", "to", "type", "float", "double", "half", "bfloat16", "cpu", "cuda", "clone", "detach", "contiguous")
)


def _weights_under_autocast(model, call):
    """``call(m)`` with a copy m of ``model``; for each of m's nn.Linear layers, whether the
    operations that computed with its weight (the layer's own forward, called any way, or a
    functional call given the weight) ran under autocast, and for which dtype. Looking at
    the weight (its device, its dtype) is no use of it."""
    import copy

    from torch.overrides import TorchFunctionMode

    m = copy.deepcopy(model)
    layers = [layer for layer in m.modules() if isinstance(layer, torch.nn.Linear)]
    uses = {id(layer.weight): set() for layer in layers}

    class _Watch(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            # A use computes with the weight: reading its .device or .dtype, or a size or a
            # comparison (no tensor made), runs in no dtype, inside autocast or not; nor does
            # a conversion or a copy of it (model.to(torch.bfloat16), .float(), .clone()).
            name = getattr(func, "__name__", "")
            if name in _NOT_USES or not isinstance(out, (torch.Tensor, tuple, list)):
                return out
            for a in (*args, *kwargs.values()):
                if isinstance(a, torch.Tensor) and id(a) in uses:
                    dev = a.device.type
                    if torch.is_autocast_enabled(dev):
                        uses[id(a)].add("under " + str(torch.get_autocast_dtype(dev)).replace("torch.", "") + " autocast")
                    else:
                        uses[id(a)].add("outside autocast")
            return out

    try:
        with _Watch():
            call(m)
    except Exception as e:
        return f"raised {type(e).__name__}"
    return [
        "used " + " and ".join(sorted(uses[id(layer.weight)])) if uses[id(layer.weight)] else "not used"
        for layer in layers
    ]


def _autocast_asked_for_meta(call):
    """``call()`` runs the learner's function on data on the meta device: whether it asked
    autocast for the data's device (torch refuses autocast for meta, and says so)."""
    try:
        call()
    except RuntimeError as e:
        if "device_type 'meta'" in str(e):
            return "autocast asked for the meta device"
        if "unsupported scalarType" in str(e):  # newer torch, no dtype=: the default dtype of 'meta' was looked up
            return "autocast asked for the meta device"
        raise
    return "autocast not asked for the meta device"
