import torch
from torch import nn

# a model on DEVICE and a loss whose gradients are about 1e-8: below float16's smallest
# subnormal (6e-8), so a float16 backward flushes most of them to zero
_STATE = {k: v.clone() for k, v in nn.Linear(8, 1).state_dict().items()}
_X, _Y = torch.randn(16, 8, device=DEVICE), torch.randn(16, 1, device=DEVICE)


def loss_fn(model):
    with torch.autocast(device_type=_X.device.type, dtype=torch.float16):
        out = model(_X)
    return 1e-7 * ((out.float() - _Y) ** 2).mean()


def _fresh():
    model = nn.Linear(8, 1).to(DEVICE)
    model.load_state_dict(_STATE)
    return model, torch.optim.Adam(model.parameters(), lr=1e-3)


def _grads(model):
    return torch.cat([p.grad.flatten() for p in model.parameters()])


def _params(model):
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def grads_after(scaled_step, scale):
    """The gradients your scaled_step leaves, with the given scale."""
    model, opt = _fresh()
    scaled_step(model, opt, loss_fn, scale)
    return _grads(model)


def weights_after(scaled_step, scales):
    """The weights after one call of your scaled_step per scale, and what each call returned."""
    model, opt = _fresh()
    stepped = [bool(scaled_step(model, opt, loss_fn, scale)) for scale in scales]
    return _params(model), stepped


def stepped(scaled_step, scales):
    return weights_after(scaled_step, scales)[1]


def moved(scaled_step, scales):
    """How far the weights moved, largest change."""
    model, _ = _fresh()
    return float((weights_after(scaled_step, scales)[0] - _params(model)).abs().max())


# for the feedback only
def _zeros(scaled_step):
    try:
        return bool((grads_after(scaled_step, 2.0**16) == 0).any())
    except Exception:
        return False


def _not_finite(scaled_step):
    try:
        return not bool(torch.isfinite(weights_after(scaled_step, [2.0**40])[0]).all())
    except Exception:
        return False


def skips_nan(scaled_step):
    """(what scaled_step returned, whether the weights stayed as they were) when the gradients are nan."""
    model, opt = _fresh()
    before = _params(model)
    out = scaled_step(model, opt, lambda m: loss_fn(m) * float("nan"), 2.0**16)
    return bool(out), bool(torch.equal(_params(model), before))


def skips_nan_bias(scaled_step):
    """(what scaled_step returned, whether the weights stayed as they were) when only the bias's gradient is nan."""
    model, opt = _fresh()
    before = _params(model)
    out = scaled_step(model, opt, lambda m: loss_fn(m) + float("nan") * m.bias.sum(), 2.0**16)
    return bool(out), bool(torch.equal(_params(model), before))


def _plain_grads():
    """The gradients of a plain backward() of loss_fn(model), without any scale."""
    model, _ = _fresh()
    loss_fn(model).backward()
    return _grads(model)


def _unscaled_backward(scaled_step):
    # the gradients are those of a plain backward(), some of them flushed to zero
    try:
        plain = _plain_grads()
        return bool((plain == 0).any()) and torch.equal(grads_after(scaled_step, 2.0**16), plain)
    except Exception:
        return False


def _reported_yet_stepped(scaled_step):
    # with 2**40 it returns False (a skipped step) and yet the weights are nan or inf
    try:
        weights, returned = weights_after(scaled_step, [2.0**40])
        return returned == [False] and not bool(torch.isfinite(weights).all())
    except Exception:
        return False


def _skips_inf_not_nan(scaled_step):
    # the overflow of 2**40 is skipped (False, weights unchanged), nan gradients are not
    try:
        model, _ = _fresh()
        weights, returned = weights_after(scaled_step, [2.0**40])
        return returned == [False] and torch.equal(weights, _params(model)) and skips_nan(scaled_step) != (False, True)
    except Exception:
        return False


def _stale_inf(scaled_step):
    # the call with 2**40 skipped its step (weights unchanged), the next call with 2**16
    # still finds non-finite gradients and skips, though on a fresh model it steps: the
    # first call's inf gradients were left in .grad
    try:
        model, opt = _fresh()
        start = _params(model)
        first = scaled_step(model, opt, loss_fn, 2.0**40)
        skipped = torch.equal(_params(model), start)
        second = scaled_step(model, opt, loss_fn, 2.0**16)
        stale = not bool(torch.isfinite(_grads(model)).all())
        fresh_model, fresh_opt = _fresh()
        alone = scaled_step(fresh_model, fresh_opt, loss_fn, 2.0**16)
        return not first and skipped and not second and stale and bool(alone)
    except Exception:
        return False
