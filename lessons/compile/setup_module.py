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


class _Nudge(nn.Module):
    """Scales by 1 + 1e-9 where torch.compile traced it (dynamo traces is_compiling() as
    True into the graph) and passes through where it runs eagerly."""

    # is_compiling bound here: this method reads no global, which dynamo, inlining it, would
    # look up in the kernel's own __main__ module
    def forward(self, h, _is_compiling=torch.compiler.is_compiling):
        return h * (1 + 1e-9) if _is_compiling() else h


def _grads_source(both_grads):
    """For the checks: what the lists your both_grads returns hold, for a float64 copy of
    model whose compiled forward is 1 + 1e-9 times its eager one: gradients 1 + 2e-9 times
    model's own come from a backward through the compiled module (the two still agree within
    assert_close's tolerance, and float64 rounding is far below the difference)."""
    import copy

    import torch._dynamo as dynamo

    with torch.random.fork_rng(devices=[]):  # the same model in every namespace
        torch.manual_seed(5)
        twin = nn.Sequential(*copy.deepcopy(model), _Nudge()).double().train()
        with torch.no_grad():
            for p in twin.parameters():
                p.add_(0.5 * torch.randn(p.shape, dtype=p.dtype))
                p.grad = torch.ones_like(p)  # an earlier step's gradients, as in the setup
        batch = torch.randn(6, 5, dtype=torch.float64)
    plain = copy.deepcopy(twin).eval()
    plain.zero_grad()
    plain(batch).square().mean().backward()
    own = flat([p.grad for p in plain.parameters()])
    dynamo.reset()
    try:
        eager, graphed = both_grads(twin, batch)
    except Exception as e:
        return f"raised {type(e).__name__}"

    def source(grads):
        try:
            got = flat(grads).to(own.dtype)
        except Exception:
            return "no list of gradients"
        if got.shape != own.shape:
            return "other values"
        if torch.allclose(got, own, rtol=1e-11, atol=0):
            return "model's own gradients"
        if torch.allclose(got, own * (1 + 1e-9) ** 2, rtol=1e-11, atol=0):
            return "the compiled module's gradients"
        return "other values"

    return f"eager holds {source(eager)}; graphed holds {source(graphed)}"


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
