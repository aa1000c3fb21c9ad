import torch
from torch import nn


def hooked_output(scale_inputs, predict):
    """Your predict's output with your pre-hook attached."""
    model = _fresh()
    scale_inputs(model, _S)
    return predict(model, _X.clone())


def direct_output(scale_inputs):
    """model(x) called directly, with your hook attached."""
    model = _fresh()
    scale_inputs(model, _S)
    return model(_X.clone()).detach()


def input_after(scale_inputs, predict):
    """The caller's x after your predict ran with the hook."""
    model = _fresh()
    scale_inputs(model, _S)
    x = _X.clone()
    predict(model, x)
    return x


def input_after_direct_call(scale_inputs):
    """The caller's x after model(x) was called directly, with your hook attached."""
    model = _fresh()
    scale_inputs(model, _S)
    x = _X.clone()
    model(x)
    return x


def output_after_remove(scale_inputs, predict):
    """Your predict's output once the handle your scale_inputs returned is removed."""
    model = _fresh()
    scale_inputs(model, _S).remove()
    return predict(model, _X.clone())


def _skips_hooks(predict):
    # a known-good pre-hook that zeroes the input: a predict that runs hooks gives model(0)
    model = _fresh()
    model.register_forward_pre_hook(lambda module, args: (torch.zeros_like(args[0]),))
    return not torch.allclose(predict(model, _X.clone()), _fresh()(torch.zeros_like(_X)))


def _hooks_registered(scale_inputs):
    """How many forward pre-hooks (and forward hooks) scale_inputs left on the model."""
    model = _fresh()
    scale_inputs(model, _S)
    return len(model._forward_pre_hooks) + len(model._forward_hooks)


def pre_hooks_left(scale_inputs):
    """(forward pre-hooks on the model, whether the model's own forward was replaced) after
    scale_inputs(model, s)."""
    model = _fresh()
    scale_inputs(model, _S)
    return (len(model._forward_pre_hooks), "forward" in vars(model))


def other_hooks_left(scale_inputs):
    """How many hooks other than forward pre-hooks scale_inputs left on the model."""
    model = _fresh()
    scale_inputs(model, _S)
    return len(model._forward_hooks) + len(model._backward_hooks) + len(model._backward_pre_hooks)


def caller_input_written(scale_inputs, predict):
    """Whether the caller's x was written in place (its version counter moved, whatever values
    it ends with) by predict, then by a direct model(x), with your hook attached."""
    written = []
    for run in (lambda model, x: predict(model, x), lambda model, x: model(x)):
        model = _fresh()
        scale_inputs(model, _S)
        x = _X.clone()
        before = x._version
        run(model, x)
        written.append(x._version != before)
    return written


def _hook_without_effect(scale_inputs):
    # a hook is registered, and model(x) is what it is without one
    model = _fresh()
    scale_inputs(model, _S)
    return bool(model._forward_pre_hooks) and torch.allclose(model(_X.clone()), _fresh()(_X))


def _mutates_input(scale_inputs):
    # the hooked model, called directly, changed the tensor it was given
    return not torch.equal(input_after_direct_call(scale_inputs), _X)


def _scales_output(scale_inputs):
    # the hooked model gives model(x) * s: the output scaled (a forward hook), not the input
    model = _fresh()
    scale_inputs(model, _S)
    out = model(_X.clone())
    return torch.allclose(out, _fresh()(_X) * _S) and not torch.allclose(out, _fresh()(_X * _S))


def _pre_hook_result_type(scale_inputs):
    # the type of what the one pre-hook scale_inputs registered returns, called as
    # hook(module, args) on (x,) (None where there is not exactly one, or it raises)
    try:
        model = _fresh()
        scale_inputs(model, _S)
        hooks = list(model._forward_pre_hooks.values())
        if len(hooks) != 1:
            return None
        return type(hooks[0](model, (_X.clone(),))).__name__
    except Exception:
        return None
