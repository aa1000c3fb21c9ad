import torch
from torch import nn

X = torch.randn(32, 4, device=DEVICE)
w_true = torch.tensor([[1.0], [-2.0], [0.5], [3.0]], device=DEVICE)
Y = X @ w_true + 0.1 * torch.randn(32, 1, device=DEVICE)
loss_fn = nn.MSELoss()
micro_batches = list(zip(X.split(8), Y.split(8)))  # 4 micro-batches of 8


def make_model():
    torch.manual_seed(3)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1)).to(DEVICE)


model = make_model()
opt = torch.optim.SGD(model.parameters(), lr=0.05)


def _flat(tensors):
    return torch.cat([t.reshape(-1) for t in tensors])


def _grads(m):
    return _flat([p.grad if p.grad is not None else torch.zeros_like(p) for p in m.parameters()]).detach().clone()


def grads_after(update, max_norm=1e9):
    # lr = 0 and a huge max_norm: .grad after one call, unclipped and unused
    m = make_model()
    update(m, torch.optim.SGD(m.parameters(), lr=0.0), micro_batches, max_norm)
    return _grads(m)


def grads_after_two(update):
    # two calls on one model (lr = 0): the second must not add onto the first one's .grad
    m = make_model()
    opt = torch.optim.SGD(m.parameters(), lr=0.0)
    update(m, opt, micro_batches, 1e9)
    update(m, opt, micro_batches, 1e9)
    return _grads(m)


# three of the four micro-batches, 24 examples: a divisor typed in (4, or 32 examples) is wrong here
_three = micro_batches[:3]


def grads_after_three(update):
    # lr = 0, no clipping: .grad after one call on 3 micro-batches (must be the gradient of those 24)
    m = make_model()
    update(m, torch.optim.SGD(m.parameters(), lr=0.0), _three, 1e9)
    return _grads(m)


def _fixed_divisor(update):
    # on 3 micro-batches, the gradient is 3/4 of the 24 examples' one: divided by 4 (or len(xb) / 32)
    g, full = grads_after_three(update), _grad_of(torch.cat([xb for xb, _ in _three]), torch.cat([yb for _, yb in _three]))
    return torch.allclose(g, 0.75 * full, rtol=1e-4, atol=1e-6)


def params_after(update, max_norm):
    m = make_model()
    update(m, torch.optim.SGD(m.parameters(), lr=0.1), micro_batches, max_norm)
    return _flat([p.detach() for p in m.parameters()]).clone()


def _grad_of(xb, yb):
    m = make_model()
    loss_fn(m(xb), yb).backward()
    return _grads(m)


def _accumulation(update):
    g = grads_after(update)
    close = lambda a, b: torch.allclose(a, b, rtol=1e-4, atol=1e-6)
    if close(g, 4 * _grad_of(X, Y)):
        return "not divided"
    last = _grad_of(*micro_batches[-1])
    if close(g, last) or close(g, last / 4):
        return "last only"
    return None


def _piles_up(update):
    # the second update's .grad is twice the first one's: both updates' gradients were added up
    once, twice = grads_after(update), grads_after_two(update)
    return bool(once.abs().sum() > 0) and torch.allclose(twice, 2 * once, rtol=1e-4, atol=1e-6)


def _left_after(update, batches, max_norm):
    m = make_model()
    update(m, torch.optim.SGD(m.parameters(), lr=0.1), batches, max_norm)
    return m, _grads(m)


def _clipping(update):
    m, left_grads = _left_after(update, micro_batches, 0.01)
    moved = _flat([p.detach() for p in m.parameters()])
    if torch.equal(moved, _flat([p.detach() for p in make_model().parameters()])):
        return None  # no step at all
    left = float(left_grads.norm())
    if left > 0.0101:
        # the same norm left on data whose gradient is larger (targets times 3): clipped to a
        # norm of its own, not to the max_norm it was given
        bigger = float(_left_after(update, [(xb, 3 * yb) for xb, yb in micro_batches], 0.01)[1].norm())
        if abs(left - bigger) <= 1e-4 * left:
            return "fixed norm"
        if abs(left - float(grads_after(update).norm())) <= 1e-4 * left:
            return "not clipped"  # the norm it has without clipping
        if float(left_grads.abs().max()) <= 0.01 * (1 + 1e-5):
            return "clamped"  # every element within +-max_norm: clip_grad_value_
        return None
    if torch.allclose(moved, params_after(update, 1e9), rtol=1e-5, atol=1e-7):
        return "after step"
    return None


def _steps_global_model(update):
    # the fresh model passed in gets no gradient at all, while the global model's .grad changed
    before = _grads(model)
    m = make_model()
    update(m, torch.optim.SGD(m.parameters(), lr=0.0), micro_batches, 1e9)
    return all(p.grad is None for p in m.parameters()) and not torch.equal(before, _grads(model))


def peak_kept_bytes(update):
    """The most bytes of tensors autograd held for backward at one time during one update
    (learning rate 0): accumulating holds one micro-batch's graph at a time."""
    import weakref

    live, peak = [0], [0]

    class Held:  # what autograd keeps for one saved tensor, freed with its graph
        def __init__(self, tensor):
            self.tensor = tensor

    def release(size):
        live[0] -= size

    def pack(tensor):
        held, size = Held(tensor), tensor.numel() * tensor.element_size()
        live[0] += size
        peak[0] = max(peak[0], live[0])
        weakref.finalize(held, release, size)
        return held

    m = make_model()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda held: held.tensor):
        update(m, torch.optim.SGD(m.parameters(), lr=0.0), micro_batches, 1e9)
    return torch.tensor(float(peak[0]))
