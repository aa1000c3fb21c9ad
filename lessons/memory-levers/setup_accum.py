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


def full_batch_grads():
    """The gradients of the mean squared error over the whole batch at once."""
    model = _fresh()
    nn.functional.mse_loss(model(_X), _Y).backward()
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


def _per_example_only(accumulate):
    # a summed loss divided by the number of examples alone: out_features times the mean's gradient
    try:
        return torch.allclose(accumulated(accumulate), full_batch_grads() * _OUT)
    except Exception:
        return False


# a second batch: the first two micro-batches alone, so a total taken from MICRO_BATCHES is wrong for it
_OTHER = MICRO_BATCHES[:2]


def accumulated_other(accumulate):
    """The gradients your accumulate leaves in a fresh model, given only the first two micro-batches."""
    model = _fresh()
    accumulate(model, list(_OTHER))
    return _grads(model)


def full_other_grads():
    """The whole-batch gradients of those two micro-batches."""
    model = _fresh()
    xs, ys = zip(*_OTHER)
    nn.functional.mse_loss(model(torch.cat(xs)), torch.cat(ys)).backward()
    return _grads(model)


def backward_passes(accumulate):
    """How many backward passes reached the model's weight while your accumulate ran."""
    model, count = _fresh(), [0]
    model.weight.register_hook(lambda grad: count.__setitem__(0, count[0] + 1))
    accumulate(model, MICRO_BATCHES)
    return count[0]


def _global_total(accumulate):
    # right on MICRO_BATCHES, wrong on another list: the total was taken from the global, not the argument
    try:
        return torch.allclose(accumulated(accumulate), full_batch_grads()) and not torch.allclose(
            accumulated_other(accumulate), full_other_grads()
        )
    except Exception:
        return False


def _grads_cleared(accumulate):
    # backward ran, yet no gradient is left: zero_grad() (set_to_none) after the last backward
    try:
        model = _fresh()
        accumulate(model, MICRO_BATCHES)
        return backward_passes(accumulate) > 0 and all(p.grad is None for p in model.parameters())
    except Exception:
        return False
