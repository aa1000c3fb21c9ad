import torch
from torch import nn

# three blobs of 20 points in 2-D, labelled 0, 1, 2
centers = torch.tensor([[2.0, 0.0], [-1.0, 1.7], [-1.0, -1.7]])
y = torch.arange(3).repeat_interleave(20)
X = centers[y] + 0.6 * torch.randn(60, 2)
X, y = X.to(DEVICE), y.to(DEVICE)

model = nn.Linear(2, 3).to(DEVICE)
opt = torch.optim.SGD(model.parameters(), lr=0.5)
loss_fn = nn.CrossEntropyLoss()


def _fresh(lr):
    torch.manual_seed(1)
    m = nn.Linear(2, 3).to(DEVICE)
    return m, torch.optim.SGD(m.parameters(), lr=lr)


# a batch other than (X, y) for the checks that call train_step: a step that uses the
# global X and y instead of its xb and yb arguments trains on the wrong data there
_XB, _YB = X[::2], y[::2]


def _counting_steps(o):
    """Replaces o.step on this one optimizer by a wrapper that counts its calls; returns the count list."""
    calls, real = [], o.step

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    o.step = counted
    return calls


def _stepped_without_gradients(step):
    # the step computed a loss and called step() on the optimizer it was given, yet the
    # weights did not move: step() ran before backward(), or after zero_grad() cleared .grad
    m, o = _fresh(0.5)
    calls = _counting_steps(o)
    before = m.weight.detach().clone()
    returned = step(m, o, loss_fn, X, y)
    return returned is not None and bool(calls) and torch.equal(before, m.weight.detach())


def _steps_global_optimizer(step):
    # the step never called step() on the optimizer it was given, and called the global opt's
    m, o = _fresh(0.5)
    own = vars(opt).get("step")
    mine, theirs = _counting_steps(o), _counting_steps(opt)
    try:
        step(m, o, loss_fn, X, y)
    finally:  # the global opt gets its own step() back
        if own is None:
            vars(opt).pop("step", None)
        else:
            opt.step = own
    return not mine and bool(theirs)


def _ignores_its_batch(step):
    # at lr 0, on the half batch (_XB, _YB), the loss returned is the full (X, y)'s
    m, o = _fresh(0.0)
    with torch.no_grad():
        full, half = float(loss_fn(m(X), y)), float(loss_fn(m(_XB), _YB))
    returned = step(m, o, loss_fn, _XB, _YB)
    ok = isinstance(returned, (float, torch.Tensor)) and torch.as_tensor(returned).numel() == 1
    return ok and full != half and abs(float(returned) - full) < 1e-6


def _ignores_its_model(step):
    # the same loss back for two different models (at lr 0 neither moves): the step
    # computes its loss with some other model, e.g. the global one
    m, o = _fresh(0.0)
    other, other_opt = _fresh(0.0)
    with torch.no_grad():
        other.weight.zero_()
        other.bias.zero_()
    first, second = step(m, o, loss_fn, X, y), step(other, other_opt, loss_fn, X, y)
    numbers = all(isinstance(v, (float, torch.Tensor)) and torch.as_tensor(v).numel() == 1 for v in (first, second))
    return numbers and float(first) == float(second)


def _weights_after_three_calls(step):
    # what the optimizer's steps did to a fresh model: a step that never calls opt.step()
    # (or steps another model) leaves these where they started
    m, o = _fresh(0.5)
    for _ in range(3):
        step(m, o, loss_fn, _XB, _YB)
    return m.weight.detach().clone()


def _weights_after_adam(step):
    # the optimizer given is Adam: a step that is not opt.step() (an SGD update written out
    # with the group's lr) moves the weights another way
    m, _ = _fresh(0.5)
    o = torch.optim.Adam(m.parameters(), lr=0.05)
    for _ in range(3):
        step(m, o, loss_fn, _XB, _YB)
    return m.weight.detach().clone()


def _weights_moved_without_adam_step(step):
    # for the mistakes: given Adam, the weights moved while Adam kept no state (its step()
    # never ran): the update was written out some other way
    m, _ = _fresh(0.5)
    before = m.weight.detach().clone()
    o = torch.optim.Adam(m.parameters(), lr=0.05)
    try:
        for _ in range(3):
            step(m, o, loss_fn, _XB, _YB)
    except Exception:
        return False
    return not torch.equal(m.weight.detach(), before) and not any(o.state.get(p) for p in m.parameters())


def _returned(step):
    m, o = _fresh(0.5)
    return step(m, o, loss_fn, X, y)
