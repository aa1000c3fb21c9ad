"""Which of the setup's tensors the learner's code left exactly as the setup made them.

Feedback only: a wrong value the code never touched is not "1.25 times the expected" by
some factor, it is the setup's value, and the sentence says that instead. Taken in the
process that runs the code, so a kernel that lies about it misleads only its own feedback.
"""

import torch

MAX_ELEMENTS = 1_000_000  # larger tensors are not copied to compare: never called untouched


def marks(ns: dict) -> dict:
    """What each of the setup's tensors is right after setup: the object and a copy."""
    out = {}
    for name, value in ns.items():
        if name.startswith("_") or type(value) not in (torch.Tensor, torch.nn.Parameter):
            continue
        if value.is_meta or value.numel() > MAX_ELEMENTS or value.layout != torch.strided:
            continue
        try:
            out[name] = (value, value.detach().clone())
        except RuntimeError:  # an inference tensor, a tensor whose data cannot be read
            continue
    return out


def untouched(ns: dict, taken: dict) -> list:
    """The names still bound to the same tensor with the same dtype, shape and values."""
    names = []
    for name, (tensor, copy) in taken.items():
        now = ns.get(name)
        if now is not tensor:
            continue
        try:
            same = now.dtype == copy.dtype and now.shape == copy.shape and torch.equal(now.detach(), copy)
        except RuntimeError:
            same = False
        if same:
            names.append(name)
    return sorted(names)
