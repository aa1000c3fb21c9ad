import torch

# a parameter and the gradients of five steps, drawn once; large lr and wd make decay visible.
# Three elements get small gradients (about 1e-4, 1e-7 and 1e-8): there eps is not negligible
# next to sqrt(v_hat), so where it goes shows
_P0 = torch.randn(6, dtype=torch.float64)
_GRADS = torch.randn(5, 6, dtype=torch.float64) * torch.tensor([1.0, 1.0, 1.0, 1e-4, 1e-7, 1e-8], dtype=torch.float64)
LR, WD = 0.1, 0.5


def trajectory(adamw_step):
    """The parameter after each of five calls of your adamw_step, stacked."""
    p, m, v = _P0.clone(), torch.zeros_like(_P0), torch.zeros_like(_P0)
    out = []
    for t, g in enumerate(_GRADS, start=1):
        p, m, v = adamw_step(p, g.clone(), m, v, t, LR, WD)
        out.append(p.clone())
    return torch.stack(out)


def arguments_changed(adamw_step):
    """Which of the tensors p, grad, m, v one call of your adamw_step changed."""
    args = [_P0.clone(), _GRADS[0].clone(), torch.full_like(_P0, 0.1), torch.full_like(_P0, 0.2)]
    before = [a.clone() for a in args]
    adamw_step(*args[:2], *args[2:], 3, LR, WD)
    return [name for name, a, b in zip(("p", "grad", "m", "v"), args, before) if not torch.equal(a, b)]
