import io

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 2)
        self.register_buffer("scale", torch.tensor([1.0, 2.0, 4.0]))

    def forward(self, x):
        return self.lin(x / self.scale)


net = Net().to(DEVICE)
with torch.no_grad():
    net.scale.mul_(10.0)      # fitted state: differs from a fresh Net's
probe = torch.randn(5, 3, device=DEVICE)


class _Payload:
    # what a malicious checkpoint can do: name any function to call while unpickling
    def __reduce__(self):
        return (print, ("!! this checkpoint just ran code on your machine",))


_buffer = io.BytesIO()
torch.save({"lin.weight": _Payload()}, _buffer)
evil_bytes = _buffer.getvalue()


def load_kwargs(from_bytes):
    """The keyword arguments from_bytes passes to torch.load."""
    seen = {}
    real_load = torch.load

    def spy(*args, **kwargs):
        seen["_called"] = True
        seen.update(kwargs)
        return real_load(*args, **kwargs)

    torch.load = spy
    try:
        from_bytes(to_bytes(net), Net().to(DEVICE))
    except Exception:
        pass
    finally:
        torch.load = real_load
    return seen


def _pickles_module(to_bytes):
    import pickle
    try:
        data = to_bytes(net)
    except pickle.PicklingError:
        return True      # pickle could not even find the class by its import path
    except Exception:
        return False
    try:
        return isinstance(torch.load(io.BytesIO(data), weights_only=False), nn.Module)
    except Exception:
        return False
