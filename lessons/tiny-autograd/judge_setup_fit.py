import torch

# The judge's alone (the learner's kernel never runs this): the descent the checks compare
# with, and its usual slips, taken by torch.autograd and torch.optim.SGD on the setup's data.


def torch_fit(zero_grad=True, maximize=False, total=False):
    """The same descent with torch.autograd and torch.optim.SGD."""
    w = torch.tensor(_W0, dtype=torch.float64, requires_grad=True)
    b = torch.tensor(_B0, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.SGD([w, b], lr=_LR, maximize=maximize)
    x, y = torch.tensor(_XS, dtype=torch.float64), torch.tensor(_YS, dtype=torch.float64)
    losses = []
    for _ in range(_STEPS):
        if zero_grad:
            opt.zero_grad()
        loss = ((w * x + b - y) ** 2).sum() if total else ((w * x + b - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return torch.tensor([w.item(), b.item(), *losses], dtype=torch.float64)
