"""What an nn.Module failed to register: plain tensor attributes, plain lists of layers."""

from typing import NamedTuple

import torch

from . import signatures

# Attributes every nn.Module keeps in its __dict__ (its registries, hooks, the mode flag).
_INTERNALS = frozenset(vars(torch.nn.Module()))


class Unregistered(NamedTuple):
    path: str  # e.g. "model.mean" or "model.layers"
    kind: str  # "tensor" | "modules"
    message: str


def _own_modules(model: torch.nn.Module):
    # torch's own modules keep private tensors legitimately; only look at user classes.
    for prefix, mod in model.named_modules():
        if not type(mod).__module__.startswith("torch."):
            yield prefix, mod


def unregistered(model: torch.nn.Module, root: str) -> list:
    registered = {id(p) for p in model.parameters()}
    found = []
    for prefix, mod in _own_modules(model):
        base = f"{root}.{prefix}" if prefix else root
        for attr, value in vars(mod).items():
            if attr in _INTERNALS or attr.startswith("__"):
                continue
            path = f"{base}.{attr}"
            if isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter):
                found.append(Unregistered(path, "tensor", signatures.plain_tensor(path)))
            elif isinstance(value, (list, tuple, dict)):
                items = value.values() if isinstance(value, dict) else value
                layers = [v for v in items if isinstance(v, torch.nn.Module)]
                if not layers:
                    continue
                params = {id(p): p for layer in layers for p in layer.parameters()}
                total = sum(p.numel() for p in params.values())
                counted = sum(p.numel() for i, p in params.items() if i in registered)
                container = type(value).__name__ if type(value) in (list, tuple, dict) else "list"
                found.append(
                    Unregistered(
                        path, "modules", signatures.plain_modules(path, container, len(layers), counted, total)
                    )
                )
    return found


def plain_tensor_at(model: torch.nn.Module, key: str) -> bool:
    """Whether a state_dict key such as 'norm.mean' names a plain tensor attribute."""
    obj = model
    *parents, last = key.split(".")
    try:
        for part in parents:
            obj = getattr(obj, part)
        value = vars(obj).get(last)
    except Exception:
        return False
    return isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter)
