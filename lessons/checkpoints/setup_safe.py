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
    # what a malicious checkpoint can do: name any function to call while unpickling (here
    # one that prints, and leaves a mark the checks look for)
    def __reduce__(self):
        code = "print('!! this checkpoint just ran code on your machine'); import builtins; builtins._checkpoint_ran = True"
        return (exec, (code,))


_buffer = io.BytesIO()
torch.save({"lin.weight": _Payload()}, _buffer)
evil_bytes = _buffer.getvalue()


_other = Net().to(DEVICE)  # another fitted model: a round trip must carry its state, not net's
with torch.no_grad():
    _other.scale.mul_(3.0)


def _runs_the_files_code(from_bytes):
    """Whether loading evil_bytes ran its code, even if from_bytes refused it afterwards."""
    import builtins

    builtins._checkpoint_ran = False
    try:
        from_bytes(evil_bytes, Net().to(DEVICE))
    except Exception:
        pass
    return bool(getattr(builtins, "_checkpoint_ran", False))


def _loads_into_the_given_model(from_bytes):
    """Whether from_bytes returns the very model it was given, loaded."""
    model = Net().to(DEVICE)
    # good bytes: a to_bytes bug cannot fail this; an exception from_bytes raises is said as one
    return from_bytes(_good_bytes(), model) is model


def _returns_another_model(from_bytes):
    """Whether from_bytes, given good bytes and a model, returns a module other than that model."""
    model = Net().to(DEVICE)
    try:
        result = from_bytes(_good_bytes(), model)
    except Exception:
        return False
    return isinstance(result, nn.Module) and result is not model


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
        from_bytes(_good_bytes(), Net().to(DEVICE))  # good bytes: a to_bytes bug cannot hide the call
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


def _from_bytes_hits_eof(from_bytes):
    """Whether from_bytes, given good bytes, fails with EOFError (a buffer read from its end)."""
    try:
        from_bytes(_good_bytes(), Net().to(DEVICE))
    except EOFError:
        return True
    except Exception:
        return False
    return False


def _good_bytes():
    buffer = io.BytesIO()
    torch.save(_other.state_dict(), buffer)
    return buffer.getvalue()


def _returns_load_result(from_bytes):
    """Whether from_bytes returns what load_state_dict returns (its missing and unexpected keys)."""
    try:
        result = from_bytes(_good_bytes(), Net().to(DEVICE))
    except Exception:
        return False
    return type(result).__name__ == "_IncompatibleKeys"


def _saves_net_whatever_given(to_bytes):
    """For the mistakes: whether to_bytes, given another model, saves net's state (read back
    with weights_only=True)."""
    try:
        state = torch.load(io.BytesIO(to_bytes(_other)), weights_only=True)
        return all(torch.equal(state[k], v) for k, v in net.state_dict().items()) and not all(
            torch.equal(state[k], v) for k, v in _other.state_dict().items()
        )
    except Exception:
        return False
