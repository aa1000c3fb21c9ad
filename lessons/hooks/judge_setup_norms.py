import torch
from torch import nn

# The judge's alone (the learner's kernel never runs this): the norms the checks compare with.


def true_norms():
    # the gradient at each Linear's output, kept with retain_grad; backward reaches the last first
    model = _fresh()
    h, outs = _X, []
    for layer in model:
        h = layer(h)
        if isinstance(layer, nn.Linear):
            h.retain_grad()
            outs.append(h)
    (h**2).sum().backward()
    return torch.tensor([o.grad.norm().item() for o in reversed(outs)])


def _output_grads():
    # the gradient at each Linear's output, in the order backward reaches them
    model = _fresh()
    h, outs = _X, []
    for layer in model:
        h = layer(h)
        if isinstance(layer, nn.Linear):
            h.retain_grad()
            outs.append(h)
    (h**2).sum().backward()
    return [o.grad for o in reversed(outs)]


def _row_norms_reduced(got):
    # what a hook gives that takes each row's norm (norm(dim=1)) and then their mean or sum,
    # where the norm of the whole gradient was meant
    if got is None or got.shape != (3,):
        return False
    grads = _output_grads()
    for reduce in (torch.mean, torch.sum):
        want = torch.tensor([reduce(g.norm(dim=1)).item() for g in grads])
        if torch.allclose(got, want, rtol=1e-5) and not torch.allclose(want, true_norms(), rtol=1e-5):
            return True
    return False


# What a hook appends that takes another size of the gradient than its (L2) norm: the sum of
# absolute values (the L1 norm), the sum of squares (the norm squared) or the largest
# absolute value.
_OTHER_NORMS = {
    "l1": lambda g: g.abs().sum(),
    "squared": lambda g: g.pow(2).sum(),
    "max": lambda g: g.abs().max(),
}


def _other_norm(got):
    """Which other size of each gradient ``got`` holds (a key of _OTHER_NORMS), or None."""
    if got is None or got.shape != (3,):
        return None
    grads = _output_grads()
    for kind, size in _OTHER_NORMS.items():
        want = torch.tensor([size(g).item() for g in grads])
        if torch.allclose(got, want, rtol=1e-5) and not torch.allclose(want, true_norms(), rtol=1e-5):
            return kind
    return None
