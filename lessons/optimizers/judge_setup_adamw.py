import torch

# The judge's alone (the learner's kernel never runs this): what torch's optimizers make of the
# setup's five gradients, and what the usual slips give, for the checks and the feedback.


def torch_trajectory(optimizer=torch.optim.AdamW):
    """The same five steps taken by a torch optimizer with the same lr and weight_decay (AdamW unless told otherwise)."""
    p = _P0.clone().requires_grad_()
    opt = optimizer([p], lr=LR, weight_decay=WD)
    out = []
    for g in _GRADS:
        p.grad = g.clone()
        opt.step()
        out.append(p.detach().clone())
    return torch.stack(out)


def _close(got, expected):
    # nan where the expected value has nan too (a slip that makes nan, compared with what it makes)
    return got.shape == expected.shape and torch.allclose(got, expected, rtol=1e-6, atol=1e-9, equal_nan=True)


def _is_adam_l2(adamw_step):
    return _close(trajectory(adamw_step), torch_trajectory(torch.optim.Adam))


def _decay_without_lr(adamw_step):
    # weight decay applied as p * (1 - wd): what AdamW's weight_decay would be if lr were 1
    p, m, v = _P0.clone(), torch.zeros_like(_P0), torch.zeros_like(_P0)
    p2, _, _ = adamw_step(p, _GRADS[0].clone(), m, v, 1, LR, WD)
    g = _GRADS[0]
    step = LR * g / (g.abs() + 1e-8)  # Adam's first step: m_hat = g, sqrt(v_hat) = |g|
    return torch.allclose(p2, _P0 * (1 - WD) - step, atol=1e-6)


def _no_bias_correction(adamw_step):
    p, m, v = _P0.clone(), torch.zeros_like(_P0), torch.zeros_like(_P0)
    g = _GRADS[0].clone()
    p2, _, _ = adamw_step(p, g, m, v, 1, LR, WD)
    m1, v1 = 0.1 * g, 0.001 * g**2
    return torch.allclose(p2, _P0 * (1 - LR * WD) - LR * m1 / (v1.sqrt() + 1e-8))


def _eps_inside_sqrt(adamw_step):
    # AdamW with eps under the square root, sqrt(v_hat + eps), instead of sqrt(v_hat) + eps
    p, m, v = _P0.clone(), torch.zeros_like(_P0), torch.zeros_like(_P0)
    out = []
    for t, g in enumerate(_GRADS, start=1):
        p = p * (1 - LR * WD)
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g**2
        p = p - LR * (m / (1 - 0.9**t)) / (v / (1 - 0.999**t) + 1e-8).sqrt()
        out.append(p.clone())
    try:
        return _close(trajectory(adamw_step), torch.stack(out))
    except Exception:
        return False


def _returns_corrected_moments(adamw_step):
    # at t = 1 from zero moments: m is 0.1 * g and v is 0.001 * g**2, their corrected copies g and g**2
    p, m, v = _P0.clone(), torch.zeros_like(_P0), torch.zeros_like(_P0)
    g = _GRADS[0].clone()
    try:
        _, m1, v1 = adamw_step(p, g, m, v, 1, LR, WD)
        return torch.allclose(m1, g) and torch.allclose(v1, g**2)
    except Exception:
        return False


def _decays_after_update(adamw_step):
    # decoupled decay applied to the already updated p: p = (p - step) * (1 - lr * wd)
    p, m, v = _P0.clone(), torch.zeros_like(_P0), torch.zeros_like(_P0)
    out = []
    for t, g in enumerate(_GRADS, start=1):
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g**2
        p = p - LR * (m / (1 - 0.9**t)) / ((v / (1 - 0.999**t)).sqrt() + 1e-8)
        p = p * (1 - LR * WD)
        out.append(p.clone())
    try:
        return _close(trajectory(adamw_step), torch.stack(out))
    except Exception:
        return False


def _slipped(
    decay=True, betas_swapped=False, weights_swapped=False, t_shift=0, corrected="mv",
    numerator="m_hat", v_power=2, v_abs=False, correction="power",
):
    # AdamW's five steps with one slip: no decay, beta1 and beta2 exchanged, a running
    # mean's weights exchanged (beta * grad + (1 - beta) * m), the bias correction's t moved,
    # one of the moments used without its bias correction, the raw gradient in the update's
    # numerator (numerator="grad"), v a running mean of grad itself (v_power=1; its
    # square root taken of |v_hat| with v_abs, else nan where v_hat < 0), the bias
    # correction 1 - beta * t (correction="product") for 1 - beta**t
    b1, b2 = (0.999, 0.9) if betas_swapped else (0.9, 0.999)
    p, m, v = _P0.clone(), torch.zeros_like(_P0), torch.zeros_like(_P0)
    out = []
    for t, g in enumerate(_GRADS, start=1):
        if decay:
            p = p * (1 - LR * WD)
        if weights_swapped:
            m, v = b1 * g + (1 - b1) * m, b2 * g**2 + (1 - b2) * v
        else:
            m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g**v_power
        c = t + t_shift
        c1, c2 = (1 - b1 * c, 1 - b2 * c) if correction == "product" else (1 - b1**c, 1 - b2**c)
        m_hat = m / c1 if "m" in corrected else m
        v_hat = v / c2 if "v" in corrected else v
        if v_abs:
            v_hat = v_hat.abs()
        p = p - LR * (g if numerator == "grad" else m_hat) / (v_hat.sqrt() + 1e-8)
        out.append(p.clone())
    return torch.stack(out)


def _like(adamw_step, **slip):
    try:
        return _close(trajectory(adamw_step), _slipped(**slip))
    except Exception:
        return False
