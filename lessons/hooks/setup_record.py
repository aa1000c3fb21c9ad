import collections

import torch
from torch import nn


def _plain(grads):
    # what the dict holds, read through dict's own C methods, not a method the code's class
    # overrides (a dict subclass that computes its entries when asked shows what it holds)
    return dict(dict.items(grads)) if isinstance(grads, dict) else grads


def _flat(grads, model):
    held = _plain(grads)
    for name, _ in model.named_parameters():
        if name in held and held[name] is None:
            raise ValueError(f"your dict holds None under {name!r}, not a gradient")
    return torch.cat([held[name].flatten() for name, _ in model.named_parameters()])


_DICTS = (dict, collections.OrderedDict, collections.defaultdict)


def _type_name(obj):
    cls = type(obj)
    return cls.__name__ if cls in _DICTS else f"{cls.__module__}.{cls.__qualname__}"


def _tensor_hooks(model):
    # each parameter's own table of tensor hooks (what p.register_hook adds to and a
    # RemovableHandle's remove() takes from)
    return [len(p._backward_hooks or {}) for p in model.parameters()]


def hook_facts(record_grads):
    """What record_grads returned and put on a fresh model, read from torch's own records:
    the type of grads, the types of the handles, the tensor hooks on each parameter, and
    those left once every handle was removed."""
    model = _fresh()
    grads, handles = record_grads(model)
    handles = list(handles)
    facts = {
        "type of grads": "dict" if type(grads) in _DICTS else _type_name(grads),
        "types of the handles": sorted({_type_name(h) for h in handles}),
        "tensor hooks on each parameter": _tensor_hooks(model),
    }
    for handle in handles:
        handle.remove()
    facts["tensor hooks on each parameter once the handles were removed"] = _tensor_hooks(model)
    return facts


def _facts(record_grads):
    try:
        return hook_facts(record_grads)
    except Exception:
        return {}


def _no_tensor_hooks(record_grads):
    return _facts(record_grads).get("tensor hooks on each parameter") == [0] * len(list(_fresh().parameters()))


def _not_plain_dict(record_grads):
    return _facts(record_grads).get("type of grads", "dict") != "dict"


def _not_torch_handles(record_grads):
    kinds = _facts(record_grads).get("types of the handles")
    return bool(kinds) and kinds != ["torch.utils.hooks.RemovableHandle"] and "str" not in kinds


def recorded(record_grads):
    """What your dict holds after one backward, in named_parameters() order."""
    model = _fresh()
    grads, handles = record_grads(model)
    _loss(model, _X).backward()
    return _flat(grads, model)


def model_grads(record_grads):
    """The hooked model's own p.grad after one backward, in named_parameters() order."""
    model = _fresh()
    grads, handles = record_grads(model)
    _loss(model, _X).backward()
    return torch.cat([p.grad.flatten() for p in model.parameters()])


def after_two_backwards(record_grads):
    """What your dict holds after a second backward (on other data) with the hooks still on."""
    model = _fresh()
    grads, handles = record_grads(model)
    _loss(model, _X).backward()
    model.zero_grad()
    _loss(model, _X2).backward()
    return _flat(grads, model)


def after_two_backwards_unzeroed(record_grads):
    """What your dict holds after a second backward with no zero_grad() between (gradient
    accumulation: p.grad then holds the sum of both), hooks still on."""
    model = _fresh()
    grads, handles = record_grads(model)
    _loss(model, _X).backward()
    _loss(model, _X2).backward()
    return _flat(grads, model)


def after_remove(record_grads):
    """What your dict holds after the handles are removed and a second backward ran on other data."""
    model = _fresh()
    grads, handles = record_grads(model)
    _loss(model, _X).backward()
    for handle in handles:
        handle.remove()
    model.zero_grad()
    _loss(model, _X2).backward()
    return _flat(grads, model)


def _names_after_one_backward(record_grads):
    model = _fresh()
    grads, _ = record_grads(model)
    _loss(model, _X).backward()
    return set(grads)


def _hooked_but_empty(record_grads):
    # every parameter has a hook, yet the dict returned is empty after a backward
    try:
        model = _fresh()
        grads, _ = record_grads(model)
        _loss(model, _X).backward()
        hooked = all(p._backward_hooks for p in model.parameters())
        return hooked and isinstance(grads, dict) and not grads
    except Exception:
        return False


def _keys_not_names(record_grads):
    # the dict returned has keys after a backward, none of them a parameter's name
    try:
        model = _fresh()
        grads, _ = record_grads(model)
        _loss(model, _X).backward()
        names = {name for name, _ in model.named_parameters()}
        return isinstance(grads, dict) and bool(grads) and not set(grads) & names
    except Exception:
        return False


def _some_names_missing(record_grads):
    # after a backward the dict holds some parameters' names, not all, and not only the last
    # one (that is late binding)
    try:
        recorded = _names_after_one_backward(record_grads)
        names = [name for name, _ in _fresh().named_parameters()]
        return bool(recorded) and recorded < set(names) and recorded != {names[-1]}
    except Exception:
        return False


def _late_binding(record_grads):
    return _names_after_one_backward(record_grads) == {"4.bias"}


def _safe(fn, *args):
    try:
        return fn(*args)
    except Exception:
        return None


def _stores_none(record_grads):
    # every name is recorded, but what was stored is None (p.grad read inside the hook, before accumulation)
    model = _fresh()
    grads, _ = record_grads(model)
    _loss(model, _X).backward()
    names = [name for name, _ in model.named_parameters()]
    return set(grads) == set(names) and all(grads[name] is None for name in names)


def _hooks_on(model):
    """How many tensor hooks the model's parameters hold (before and after accumulation)."""
    return sum(
        len(p._backward_hooks or {}) + len(getattr(p, "_post_accumulate_grad_hooks", None) or {})
        for p in model.parameters()
    )


def _some_handles(record_grads):
    # fewer handles returned than hooks registered (but some): removing them leaves the other hooks on
    model = _fresh()
    grads, handles = record_grads(model)
    return 0 < len(list(handles)) < _hooks_on(model)


def _holds_dot_grad(record_grads):
    # what the dict holds is each parameter's own .grad tensor (a post-accumulate hook's param.grad)
    model = _fresh()
    grads, _ = record_grads(model)
    _loss(model, _X).backward()
    return all(grads.get(name) is p.grad for name, p in model.named_parameters())


def _stores_non_tensors(record_grads):
    # every name is recorded, but as something other than a tensor (a NumPy copy, a list, a float)
    model = _fresh()
    grads, _ = record_grads(model)
    _loss(model, _X).backward()
    names = [name for name, _ in model.named_parameters()]
    stored = [grads.get(name) for name in names]
    return set(grads) >= set(names) and all(v is not None and not isinstance(v, torch.Tensor) for v in stored)


def _handles_type(record_grads):
    # the type of the handles record_grads returned, and of what iterating them yields
    try:
        grads, handles = record_grads(_fresh())
        return type(handles).__name__, sorted({type(h).__name__ for h in handles})
    except Exception:
        return None


def _stores_scalars(record_grads):
    # every name is recorded, each as a 0-d tensor (a norm, a sum, a mean of the gradient)
    try:
        model = _fresh()
        grads, _ = record_grads(model)
        _loss(model, _X).backward()
        names = [name for name, _ in model.named_parameters()]
        stored = [grads.get(name) for name in names]
        return set(grads) >= set(names) and all(isinstance(v, torch.Tensor) and v.dim() == 0 for v in stored)
    except Exception:
        return False
