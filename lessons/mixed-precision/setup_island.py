import torch
from torch import nn

# an encoder on DEVICE (float32 weights) and a batch of inputs; sizes drawn too
_D = int(torch.randint(6, 12, ()))
encoder = nn.Sequential(nn.Linear(_D, 32), nn.Tanh(), nn.Linear(32, 16)).to(DEVICE)
x = torch.randn(int(torch.randint(8, 16, ())), _D, device=DEVICE)


def _autocast_on_meta(embed_and_compare):
    """For the checks: is autocast asked for the meta device when the data is on meta?"""
    meta_encoder = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 16)).to("meta")
    try:
        embed_and_compare(meta_encoder, torch.empty(5, 8, device="meta"))
    except RuntimeError as e:
        if "device_type 'meta'" in str(e):  # torch refuses autocast for meta: it was asked for x's device
            return "autocast asked for the meta device"
        raise
    return "autocast not asked for the meta device"


def other_emb(embed_and_compare):
    """emb from embed_and_compare given another encoder and another batch (on DEVICE)."""
    with torch.random.fork_rng(devices=[]):  # the same weights in every namespace, the exercise's RNG untouched
        torch.manual_seed(7)
        other = nn.Sequential(nn.Linear(5, 32), nn.Tanh(), nn.Linear(32, 16))
        batch = torch.randn(6, 5)
    return embed_and_compare(other.to(DEVICE), batch.to(DEVICE))[0]


def _linear_weights_used(fn):
    """For the checks: embed_and_compare called with a copy m of encoder; for each of m's
    nn.Linear layers, whether the operations that took its weight (the layer's own forward,
    called any way, or a functional call given the weight) ran under autocast, and for
    which dtype."""
    import copy

    from torch.overrides import TorchFunctionMode

    m = copy.deepcopy(encoder)
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
            fn(m, x)
    except Exception as e:
        return f"raised {type(e).__name__}"
    return [
        "used " + " and ".join(sorted(uses[id(layer.weight)])) if uses[id(layer.weight)] else "not used"
        for layer in layers
    ]
