# The setup of grad-parity (setup.py), with what sgd-step-parity's checks add: kept apart so
# that grad-parity's setup keeps no state of its own.
import numpy as np
import torch
from torch import nn
from torch.overrides import TorchFunctionMode

rng = np.random.default_rng(0)
X = rng.normal(size=(16, 3))     # inputs, float64
Y = rng.normal(size=(16, 2))     # targets
W = rng.normal(size=(3, 2))      # weights, NumPy convention: P = X @ W + b
b = rng.normal(size=2)           # bias
lr = 0.1

# Other data, of other sizes, for the check's own call of numpy_step. No torch code of
# the learner's ever saw it, so a step read back from torch cannot answer for it.
_other = np.random.default_rng(int(torch.randint(1 << 30, ())))  # another in each world
_X2, _Y2 = _other.normal(size=(9, 4)), _other.normal(size=(9, 3))
_W2, _b2, _LR2 = _other.normal(size=(4, 3)), _other.normal(size=3), 0.05


class _TorchCalls(TorchFunctionMode):
    """Records the torch functions called while it is active."""

    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or repr(func)
        if name not in self.names:
            self.names.append(name)
        return func(*args, **(kwargs or {}))


def _on_other_data(numpy_step):
    with _TorchCalls() as calls:
        W_next, b_next = numpy_step(_W2.copy(), _b2.copy(), _X2.copy(), _Y2.copy(), _LR2)
    return np.asarray(W_next), np.asarray(b_next), calls.names


def arguments_kept(numpy_step):
    """Whether numpy_step left the arrays it was given as they were (W, b, X, Y), on that other data."""
    given = [_W2.copy(), _b2.copy(), _X2.copy(), _Y2.copy()]
    numpy_step(*given, _LR2)
    return [bool(np.array_equal(a, kept)) for a, kept in zip(given, (_W2, _b2, _X2, _Y2))]


def stepped_weight(numpy_step):
    """W_next from your numpy_step on other data (9 rows, 4 inputs, 3 outputs, lr 0.05)."""
    return torch.as_tensor(_on_other_data(numpy_step)[0])


def stepped_bias(numpy_step):
    """b_next from your numpy_step on that other data."""
    return torch.as_tensor(_on_other_data(numpy_step)[1])


def torch_called(numpy_step):
    """The torch functions your numpy_step called (at most 5 named)."""
    return _on_other_data(numpy_step)[2][:5]


# What each optimizer step left in the parameters it holds (by id, the values right after
# the step): the layer must have taken its SGD step itself, not been given numpy_step's
# result, which holds the same numbers. One hook per kernel: the setup runs again in each
# world (and a reference kernel serves many verifications), so the last one replaces it.
_after_steps = {}


def _remember_step(optimizer, args, kwargs):
    for group in optimizer.param_groups:
        for p in group["params"]:
            _after_steps[id(p)] = (p, p.detach().clone())


import torch.optim.optimizer as _hooks  # noqa: E402

if getattr(_hooks, "_ptfund_step_hook", None) is not None:
    _hooks._ptfund_step_hook.remove()
_hooks._ptfund_step_hook = _hooks.register_optimizer_step_post_hook(_remember_step)


def stepped_by_optimizer(layer):
    """Whether layer's weight and bias each hold what an optimizer step left in them."""
    kept = [_after_steps.get(id(p)) for p in (layer.weight, layer.bias)]
    return all(k is not None and k[0] is p and torch.equal(k[1], p.detach()) for k, p in zip(kept, (layer.weight, layer.bias)))
