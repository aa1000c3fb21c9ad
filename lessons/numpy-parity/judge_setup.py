import numpy as np
import torch
from torch import nn

# The judge's alone (the learner's kernel never runs this): a correct derivation, and
# what the usual slips give, for the feedback.
_R = X @ W + b - Y
_dW = 2 * X.T @ _R / _R.size
_db = 2 * _R.sum(axis=0) / _R.size


def _step_from(weight, reduction="mean"):
    """layer.weight after one SGD step, starting from the given weight matrix."""
    layer = nn.Linear(3, 2).double()
    with torch.no_grad():
        layer.weight.copy_(torch.as_tensor(weight, dtype=torch.float64))
        layer.bias.copy_(torch.from_numpy(b))
    opt = torch.optim.SGD(layer.parameters(), lr=lr)
    nn.MSELoss(reduction=reduction)(layer(torch.from_numpy(X)), torch.from_numpy(Y)).backward()
    opt.step()
    return layer.weight.detach()


def _close(a, b):
    try:
        return np.allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), rtol=1e-9, atol=1e-12)
    except Exception:
        return False
