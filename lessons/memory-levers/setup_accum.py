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
