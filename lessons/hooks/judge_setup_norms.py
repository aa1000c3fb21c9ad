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
