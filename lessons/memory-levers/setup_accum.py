import torch
from torch import nn

# one batch in three micro-batches of different sizes (the last one the remainder)
_s1 = int(torch.randint(2, 6, ()))
_SIZES = [_s1, _s1 + int(torch.randint(1, 4, ())), int(torch.randint(1, _s1, ()))]
_OUT = int(torch.randint(2, 4, ()))  # more than one output column: a mean is over examples x outputs
_X = torch.randn(sum(_SIZES), 3)
_Y = torch.randn(sum(_SIZES), _OUT)
MICRO_BATCHES = list(zip(_X.split(_SIZES), _Y.split(_SIZES)))
_STATE = {k: v.clone() for k, v in nn.Linear(3, _OUT).state_dict().items()}


def _fresh():
    model = nn.Linear(3, _OUT)
    model.load_state_dict(_STATE)
    return model


def _grads(model):
    return torch.cat([p.grad.flatten() for p in model.parameters()])


def accumulated(accumulate):
    """The gradients your accumulate leaves in a fresh model."""
    model = _fresh()
    accumulate(model, MICRO_BATCHES)
    return _grads(model)


def _weighted(weights):
    model = _fresh()
    for (xb, yb), w in zip(MICRO_BATCHES, weights):
        (w * nn.functional.mse_loss(model(xb), yb)).backward()
    return _grads(model)


def _matches(accumulate, weights):
    try:
        return torch.allclose(accumulated(accumulate), _weighted(weights))
    except Exception:
        return False


def _only_last(accumulate):
    # the last micro-batch's weighted loss alone: what zero_grad inside the loop leaves
    return _matches(accumulate, [0.0, 0.0, _SIZES[-1] / sum(_SIZES)])


# a second batch: the first two micro-batches alone, so a total taken from MICRO_BATCHES is wrong for it
_OTHER = MICRO_BATCHES[:2]


def accumulated_other(accumulate):
    """The gradients your accumulate leaves in a fresh model, given only the first two micro-batches."""
    model = _fresh()
    accumulate(model, list(_OTHER))
    return _grads(model)


def backward_passes(accumulate):
    """How many backward passes reached the model's weight while your accumulate ran."""
    model, count = _fresh(), [0]
    model.weight.register_hook(lambda grad: count.__setitem__(0, count[0] + 1))
    accumulate(model, MICRO_BATCHES)
    return count[0]


def added_per_backward(accumulate):
    """What each backward pass added to the weight's gradient while your accumulate ran,
    largest first (the order the micro-batches are taken in does not matter)."""
    model, added = _fresh(), []
    model.weight.register_hook(lambda grad: added.append(grad.detach().clone()))
    accumulate(model, MICRO_BATCHES)
    if not added:
        return torch.zeros(0, *model.weight.shape)
    return torch.stack(sorted(added, key=lambda g: -float(g.norm())))


class _Held:
    """What autograd keeps for one saved tensor while the setup counts: freed with the graph."""

    __slots__ = ("tensor", "__weakref__")

    def __init__(self, tensor):
        self.tensor = tensor


def peak_kept_bytes(accumulate):
    """The most bytes of tensors autograd held for backward at one time while your
    accumulate ran: one micro-batch's graph at a time is what accumulation is for."""
    import weakref

    model, live, peak = _fresh(), [0], [0]

    def pack(tensor):
        held, size = _Held(tensor), tensor.numel() * tensor.element_size()
        live[0] += size
        peak[0] = max(peak[0], live[0])
        weakref.finalize(held, _release, live, size)  # when the graph that holds it is freed
        return held

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda held: held.tensor):
        accumulate(model, MICRO_BATCHES)
    return torch.tensor(float(peak[0]))


def _release(live, size):
    live[0] -= size


def _grads_cleared(accumulate):
    # backward ran, yet no gradient is left: zero_grad() (set_to_none) after the last backward
    try:
        model = _fresh()
        accumulate(model, MICRO_BATCHES)
        return backward_passes(accumulate) > 0 and all(p.grad is None for p in model.parameters())
    except Exception:
        return False


# For the feedback only: lists of micro-batches of other sizes, to tell apart totals that
# agree on MICRO_BATCHES (its sizes can make first size x count equal the true total).
def _probe(sizes):
    n = sum(sizes)
    return list(zip(_X[:n].split(sizes), _Y[:n].split(sizes)))


# first size x count is not the total in either; both totals are at most 6 <= sum(_SIZES)
_PROBES = [_probe([1, 3]), _probe([3, 1, 2])]


def _weighted_on(batches, weights):
    model = _fresh()
    for (xb, yb), w in zip(batches, weights):
        (w * nn.functional.mse_loss(model(xb), yb)).backward()
    return _grads(model)


def _weights_match(accumulate, batches, weights):
    # the gradients your accumulate leaves on `batches` are those of weighting each
    # micro-batch's mean loss by `weights`
    try:
        model = _fresh()
        accumulate(model, list(batches))
        return torch.allclose(_grads(model), _weighted_on(batches, weights))
    except Exception:
        return False


def _assume_equal(accumulate):
    # each micro-batch weighted len(xb) / (len(first micro-batch) * number of micro-batches)
    return all(
        _weights_match(accumulate, batches, [len(xb) / (len(batches[0][0]) * len(batches)) for xb, _ in batches])
        for batches in _PROBES
    )


def _global_total(accumulate):
    # on MICRO_BATCHES and on lists with fewer examples alike, each micro-batch weighted
    # len(xb) / (MICRO_BATCHES' example count): the total does not come from the argument
    n = sum(_SIZES)
    return all(
        _weights_match(accumulate, batches, [len(xb) / n for xb, _ in batches])
        for batches in (MICRO_BATCHES, _OTHER, _PROBES[0])
    )


def _cleared_between(accumulate):
    # when a backward() after the first reached the weight, its .grad was None or zeros:
    # something cleared the gradients between backward() calls
    try:
        model, seen = _fresh(), []

        def hook(grad):
            g = model.weight.grad
            seen.append(g is None or bool((g == 0).all()))

        model.weight.register_hook(hook)
        accumulate(model, MICRO_BATCHES)
        return len(seen) > 1 and any(seen[1:])
    except Exception:
        return False
