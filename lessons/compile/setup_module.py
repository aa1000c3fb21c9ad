import torch
from torch import nn

model = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Dropout(0.5), nn.Linear(8, 2))
x = torch.randn(7, 5)
model(torch.randn(3, 5)).sum().backward()  # gradients left from an earlier step
_LEFT = [p.grad.clone() for p in model.parameters()]  # for the feedback: what that step left
_OUTPUTS = x.shape[0] * model[-1].out_features  # how many numbers the loss averages


def flat(grads):
    """One tensor of a list of gradients, in parameters() order."""
    return torch.cat([g.flatten() for g in grads])


def graphs_from(both_grads):
    """How many graphs torch.compile made while both_grads ran on a copy of model, from a clean cache."""
    import copy

    import torch._dynamo as dynamo
    from torch._dynamo.utils import counters

    dynamo.reset()
    counters.clear()
    both_grads(copy.deepcopy(model), x)
    return counters["stats"]["unique_graphs"]


def _backward_compiled(both_grads):
    """For the checks: did AOTAutograd trace a backward graph while both_grads ran on a copy of model?"""
    import copy

    import torch._dynamo as dynamo
    from torch._dynamo.utils import counters

    dynamo.reset()
    counters.clear()
    both_grads(copy.deepcopy(model), x)
    return counters["aot_autograd"]["ok"] > 0


def _assert_close_compares(both_grads):
    """For the checks: what the torch.testing.assert_close calls made while both_grads ran
    (on a copy of model) compared: 'two values', 'a value with itself' (the same object, or
    lists of the very same tensors, which can never differ), or 'nothing' (never called)."""
    import copy
    import sys

    target = torch.testing.assert_close.__code__
    seen = []

    def tensors(v):
        if isinstance(v, torch.Tensor):
            return [id(v)]
        if isinstance(v, (list, tuple)):
            return [i for item in v for i in tensors(item)]
        return [id(v)]

    def watch(frame, event, arg):
        # a profile hook sees the call however the function was bound (torch.testing.assert_close,
        # or assert_close imported by name)
        if event == "call" and frame.f_code is target:
            actual, expected = frame.f_locals.get("actual"), frame.f_locals.get("expected")
            seen.append(actual is expected or tensors(actual) == tensors(expected))

    before = sys.getprofile()
    sys.setprofile(watch)
    try:
        returned = both_grads(copy.deepcopy(model), x)
    except Exception as e:
        return f"raised {type(e).__name__}"
    finally:
        sys.setprofile(before)
    if not seen:
        return "nothing"
    if isinstance(returned, tuple) and len(returned) == 2 and tensors(returned[0]) == tensors(returned[1]):
        return "two values"  # two lists of the same tensors: the separate-lists check says so
    return "a value with itself" if all(seen) else "two values"


def _shared_grads(eager, graphed):
    """For the checks: does any tensor of eager share memory with one of graphed?"""
    ptrs = {g.untyped_storage().data_ptr() for g in eager if isinstance(g, torch.Tensor)}
    return any(isinstance(g, torch.Tensor) and g.untyped_storage().data_ptr() in ptrs for g in graphed)


# for the feedback only
def _graphs(both_grads):
    try:
        return graphs_from(both_grads)
    except Exception:
        return -1


def other_grads(both_grads):
    """The eager and compiled gradients your both_grads returns for another model and another batch, joined."""
    import copy

    with torch.random.fork_rng(devices=[]):  # the same model and batch in every namespace
        torch.manual_seed(3)
        twin = copy.deepcopy(model).train()
        with torch.no_grad():
            for p in twin.parameters():
                p.add_(torch.randn(p.shape))
                p.grad = torch.ones_like(p)  # an earlier step's gradients, as in the setup
        batch = torch.randn(4, 5)
    eager, graphed = both_grads(twin, batch)
    return torch.cat([flat(eager), flat(graphed)])
