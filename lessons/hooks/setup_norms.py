import torch
from torch import nn


def output_norms(grad_output_norms):
    """The norms your modules' backward hooks appended during one backward, in the order
    they ran."""
    model = _fresh()
    norms, handles = grad_output_norms(model)
    start, grown = len(norms), _by_backward_hooks(model, norms)
    _loss(model, _X.requires_grad_()).backward()  # an input that needs grad: no warning
    return _hooks_only(norms, start, grown)


def _by_backward_hooks(model, norms):
    # How much the modules' own backward hooks grow norms, counted as they run: a list
    # filled by tensor hooks that a forward hook (or a wrapped forward) put on the outputs
    # holds the same numbers, beside a backward hook that does nothing.
    grown = [0]

    def counting(hook):
        def hook_and_count(module, grad_input, grad_output):
            before = len(norms)
            result = hook(module, grad_input, grad_output)
            grown[0] += len(norms) - before
            return result

        return hook_and_count

    for m in model.modules():
        for key, hook in list(m._backward_hooks.items()):
            m._backward_hooks[key] = counting(hook)
    return grown


def _hooks_only(norms, start, grown):
    # the list as the backward hooks left it; nothing where something else added to it
    return torch.tensor(list(norms)) if len(norms) - start == grown[0] else torch.tensor([])


def _nested():
    # the same layers, the middle Linear inside a sub-module: the same computation, so the same norms
    m = _fresh()
    return nn.Sequential(m[0], m[1], nn.Sequential(m[2], m[3]), m[4])


def nested_norms(grad_output_norms):
    """The norms your modules' backward hooks appended during one backward through a model
    with a nested Sequential."""
    model = _nested()
    norms, handles = grad_output_norms(model)
    start, grown = len(norms), _by_backward_hooks(model, norms)
    _loss(model, _X.requires_grad_()).backward()
    return _hooks_only(norms, start, grown)


def full_hooks_on(grad_output_norms):
    """Whether each module of the model holds a full backward hook after grad_output_norms(model)
    (in model.modules() order)."""
    model = _fresh()
    grad_output_norms(model)
    return [bool(m._backward_hooks) and bool(getattr(m, "_is_full_backward_hook", False)) for m in model.modules()]


def norm_types(grad_output_norms):
    """The type of each norm your hooks appended during one backward."""
    model = _fresh()
    norms, handles = grad_output_norms(model)
    _loss(model, _X.requires_grad_()).backward()
    return [type(v).__name__ for v in norms]


def norms_after_remove(grad_output_norms):
    """How many norms your list holds after the handles are removed and backward ran again."""
    model = _fresh()
    norms, handles = grad_output_norms(model)
    _loss(model, _X.requires_grad_()).backward()
    for handle in handles:
        handle.remove()
    _loss(model, _X2.requires_grad_()).backward()
    return len(norms)


def _input_side(grad_output_norms):
    # the norms of grad_input[0]: the gradient at each Linear's input
    model = _fresh()
    x = _X.clone().requires_grad_()
    norms, _ = grad_output_norms(model)
    h, ins = x, []
    for layer in model:
        if isinstance(layer, nn.Linear):
            h.retain_grad()
            ins.append(h)
        h = layer(h)
    (h**2).sum().backward()
    return len(norms) == 3 and torch.allclose(torch.tensor(norms), torch.tensor([i.grad.norm().item() for i in reversed(ins)]))


def _filled_elsewhere(grad_output_norms):
    # the list grows during backward by more than the modules' backward hooks added to it
    try:
        model = _fresh()
        norms, _ = grad_output_norms(model)
        start, grown = len(norms), _by_backward_hooks(model, norms)
        _loss(model, _X.requires_grad_()).backward()
        return len(norms) - start > grown[0]
    except Exception:
        return False


def _every_module(grad_output_norms):
    model = _fresh()
    norms, _ = grad_output_norms(model)
    _loss(model, _X.requires_grad_()).backward()
    return len(norms) > 3


def _misses_nested(grad_output_norms):
    # every Linear of the flat model is hooked, yet the nested model's middle Linear is not
    try:
        return len(output_norms(grad_output_norms)) == 3 and len(nested_norms(grad_output_norms)) < 3
    except Exception:
        return False


def non_float_types(grad_output_norms):
    """The types, other than float, of the norms your hooks appended during one backward."""
    return sorted(set(norm_types(grad_output_norms)) - {"float"})


def _linears_hooked_after_remove(grad_output_norms):
    """How many Linears still hold a backward hook once every handle your function returned
    is removed: a handle it did not return cannot be removed."""
    model = _fresh()
    try:
        _, handles = grad_output_norms(model)
        for handle in handles:
            handle.remove()
    except Exception:
        return 0
    return sum(1 for m in model.modules() if isinstance(m, nn.Linear) and m._backward_hooks)


def _safe_output_norms(grad_output_norms):
    # output_norms, or None where it raises
    try:
        return output_norms(grad_output_norms)
    except Exception:
        return None
