import torch
import torch.nn.functional as F
from torch import nn

MAX_NORM = 1.0
# five batches on DEVICE; the third one's inputs are so large that float16 overflows to inf
_X, _Y = torch.randn(5, 16, 8, device=DEVICE), torch.randn(5, 16, 1, device=DEVICE)
_X[2] *= 1e5
_BATCHES = list(zip(_X, _Y))
_INIT = nn.Linear(8, 1)
_STATE = {k: v.clone() for k, v in _INIT.state_dict().items()}


def _fresh():
    model = nn.Linear(8, 1).to(DEVICE)
    model.load_state_dict(_STATE)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    # a small starting scale that doubles after two good steps, so five steps show it move
    scaler = torch.amp.GradScaler(DEVICE.type, init_scale=2.0**8, growth_interval=2)
    return model, opt, scaler


def _params(model):
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def _run(train_step, max_norm=MAX_NORM):
    model, opt, scaler = _fresh()
    dtypes = []
    model.register_forward_hook(lambda module, args, out: dtypes.append(str(out.dtype)))
    # what each backward() left in .grad, as it left it: before unscale_, clipping or the step
    produced = {}
    for i, p in enumerate(model.parameters()):
        p.register_post_accumulate_grad_hook(lambda p, i=i: produced.__setitem__(i, p.grad.detach().flatten().clone()))
    params, scales, grads = [], [], []
    for xb, yb in _BATCHES:
        produced.clear()
        train_step(model, opt, scaler, xb, yb, max_norm)
        params.append(_params(model))
        scales.append(scaler.get_scale())
        grads.append(torch.cat([produced.get(i, torch.zeros(p.numel(), device=p.device))
                                for i, p in enumerate(model.parameters())]))
    return params, scales, dtypes, grads


def weights_after(train_step, max_norm=MAX_NORM):
    """The weights after each of the five steps (clipped to max_norm)."""
    return torch.stack(_run(train_step, max_norm)[0])


def scales(train_step):
    """The scaler's scale after each of the five steps."""
    return _run(train_step)[1]


def forward_dtypes(train_step):
    """The dtype of the model's output in each step."""
    return _run(train_step)[2]


def backward_grads(train_step):
    """The gradients the first step's backward() produced (before unscale_, clipping and the
    step), in float32 .grad: the scaled loss's are the true gradients times the scale. The
    first step's only: after it, any slip in the step changes the weights and so the later
    gradients, which would blame the scaling for it."""
    return _run(train_step)[3][0]


def overflow_skipped(train_step):
    """Whether the weights stayed as they were through the step on the overflowing batch."""
    params = _run(train_step)[0]
    return bool(torch.equal(params[1], params[2]))


# for the feedback only: what the usual slips give
def _clip_scaled(model, opt, scaler, x, y, max_norm):
    opt.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        loss = F.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(opt)
    scaler.update()


def _like(train_step, wrong):
    try:
        return torch.allclose(weights_after(train_step), weights_after(wrong), equal_nan=True)
    except Exception:
        return False


def _true_first_grads():
    """The first batch's gradients of the unscaled float16-autocast loss, at the fresh weights."""
    model, _, _ = _fresh()
    xb, yb = _BATCHES[0]
    with torch.autocast(device_type=xb.device.type, dtype=torch.float16):
        loss = F.mse_loss(model(xb), yb)
    loss.backward()
    return torch.cat([p.grad.flatten() for p in model.parameters()])


def _backward_unscaled(train_step):
    """Whether the first step's backward() produced the unscaled loss's gradients."""
    try:
        first = _run(train_step)[3][0]
        return bool(torch.allclose(first, _true_first_grads(), rtol=1e-3, atol=1e-6))
    except Exception:
        return False


def _weights_not_finite(train_step):
    try:
        return not bool(torch.isfinite(weights_after(train_step)).all())
    except Exception:
        return False


def _error(train_step):
    try:
        _run(train_step)
    except Exception as exc:
        return str(exc)
    return ""
