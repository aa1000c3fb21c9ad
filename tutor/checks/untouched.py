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
            out[name] = (value, value.detach().clone(), _grad(value), value.requires_grad)
        except RuntimeError:  # an inference tensor, a tensor whose data cannot be read
            continue
    return out


def _grad(value: torch.Tensor) -> torch.Tensor | None:
    if not (value.is_leaf or value.retains_grad):
        return None  # a non-leaf keeps no .grad (reading it only warns)
    grad = value.grad
    return grad.detach().clone() if isinstance(grad, torch.Tensor) and grad.layout == torch.strided else grad


def untouched(ns: dict, taken: dict) -> list:
    """The names still bound to the same tensor with the same dtype, shape, values,
    requires_grad and ``.grad`` (a gradient the code wrote is a change: backward() leaves the
    values as they were)."""
    names = []
    for name, (tensor, copy, grad, requires_grad) in taken.items():
        now = ns.get(name)
        if now is not tensor:
            continue
        try:
            same = (
                now.dtype == copy.dtype
                and now.shape == copy.shape
                and torch.equal(now.detach(), copy)
                and now.requires_grad == requires_grad
                and _same_grad(_grad(now), grad)
            )
        except RuntimeError:
            same = False
        if same:
            names.append(name)
    return sorted(names)


def kept_values(ns: dict, taken: dict) -> list:
    """The names bound, at the end, to a tensor with the dtype, shape and values one of the
    setup's tensors of that name had: the same object or not, its .grad and requires_grad
    as they may be (a step that never moved a weight, but cleared its gradient)."""
    names = []
    for name, (_, copy, _, _) in taken.items():
        now = ns.get(name)
        if not isinstance(now, torch.Tensor) or type(now) not in (torch.Tensor, torch.nn.Parameter) or now.is_meta:
            continue
        try:
            if now.dtype == copy.dtype and now.shape == copy.shape and torch.equal(now.detach(), copy):
                names.append(name)
        except RuntimeError:
            continue
    return sorted(names)


def _same_grad(now: object, before: object) -> bool:
    if now is None or before is None:
        return now is None and before is None
    if not isinstance(now, torch.Tensor) or not isinstance(before, torch.Tensor):
        return False
    return now.dtype == before.dtype and now.shape == before.shape and torch.equal(now.detach(), before)
