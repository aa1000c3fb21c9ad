import torch
import torch.nn.functional as F


def _warmed():
    # two steps on both heads: Adam now holds momentum for every parameter
    model = _fresh()
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    for _ in range(2):
        opt.zero_grad()
        h = model.body(_X)
        (F.mse_loss(model.a(h), _YA) + F.mse_loss(model.b(h), _YB)).backward()
        opt.step()
    return model, opt


def _compared(model):
    # every parameter but the body Linear's bias: BatchNorm right after it subtracts the batch
    # mean, so that bias's gradient is zero up to rounding (about 1e-9), and Adam divides by
    # sqrt(v) and turns the rounding noise into full lr-sized steps whose sign depends on the
    # order of float additions; the same correct step_a could land either side
    noise = model.body[0].bias
    return torch.cat([p.detach().flatten() for p in model.parameters() if p is not noise])


def after_steps(step_a):
    """Every parameter (but the body Linear's bias, see _compared) after three calls of your step_a on the warmed-up model."""
    model, opt = _warmed()
    for _ in range(3):
        step_a(model, opt, _X, _YA)
    return _compared(model)


def head_b_steps(step_a):
    """How many steps Adam has counted for each of head b's parameters after your three
    steps on head a (the warm-up took two)."""
    model, opt = _warmed()
    for _ in range(3):
        step_a(model, opt, _X, _YA)
    return [int(opt.state[p]["step"]) if "step" in opt.state.get(p, {}) else 0 for p in model.b.parameters()]


def head_b_moved(step_a):
    """Whether head b's weight or bias was written during your three steps on head a: its
    values changed, or its version counter moved (a step written over afterwards)."""
    model, opt = _warmed()
    params = list(model.b.parameters())
    before = [(p.detach().clone(), p._version) for p in params]
    for _ in range(3):
        step_a(model, opt, _X, _YA)
    return any(not torch.equal(v, p.detach()) or p._version != n for (v, n), p in zip(before, params))


def _b_grad_zeros(step_a):
    model, opt = _warmed()
    step_a(model, opt, _X, _YA)
    return model.b.weight.grad is not None and not model.b.weight.grad.any()
