import torch

# The judge's alone (the learner's kernel never runs this): the gradients the checks compare
# with, and what the usual slips make of them, for the feedback. Each slip reads what a setup
# helper returned from the learner's function (None where it raised).


def true_grads(x=None):
    model = _fresh()
    _loss(model, _X if x is None else x).backward()
    return torch.cat([p.grad.flatten() for p in model.parameters()])


def _keeps_recording(first, after_removing):
    # recorded the first backward right, yet the handles did not stop it
    if first is None or after_removing is None:
        return False
    return torch.equal(first, true_grads()) and not torch.equal(after_removing, true_grads())


def _accumulates(got):
    # after a second backward the dict holds the sum of both backwards' gradients
    return got is not None and torch.allclose(got, true_grads() + true_grads(_X2))


def _keeps_first(got):
    # after a second backward (on other data) the dict still holds the first backward's gradients
    return got is not None and torch.allclose(got, true_grads()) and not torch.allclose(got, true_grads(_X2))
