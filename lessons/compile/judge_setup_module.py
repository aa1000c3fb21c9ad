# The judge's alone (the learner's kernel never runs this): the eager gradients the checks
# compare with.


def eager_grads():
    """The gradients of the loss with dropout off, from a fresh copy of the model (nothing shared)."""
    import copy

    twin = copy.deepcopy(model).eval()
    twin.zero_grad()
    twin(x).square().mean().backward()
    return [p.grad.clone() for p in twin.parameters()]
