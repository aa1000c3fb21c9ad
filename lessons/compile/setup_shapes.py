import torch
import torch._dynamo as dynamo
from torch._dynamo.utils import counters


def step(x):
    """A small model step; its batch size (dim 0) differs from call to call."""
    h = torch.tanh(x @ W)
    return h - h.mean(dim=0)


# the widths (16 in, 3 out) are no batch size: dynamo gives equal sizes one symbol (duck
# sizing), so a batch of 3 or 16 rows would be tied to a width and recompile at the next size
W = torch.randn(16, 3)
# four batches of different sizes, 4 to 10 (dynamo always specialises sizes 0 and 1)
_sizes = (torch.randperm(7)[:4] + 4).tolist()
BATCHES = [torch.randn(n, 16) for n in _sizes]


def graphs_compiled(run_all):
    """How many graphs torch.compile made while run_all ran step on BATCHES, from a clean cache."""
    dynamo.reset()
    counters.clear()
    run_all(step, [b.clone() for b in BATCHES])
    return counters["stats"]["unique_graphs"]


def outputs_of(run_all):
    """run_all's outputs on BATCHES, joined into one tensor."""
    dynamo.reset()
    return torch.cat(list(run_all(step, [b.clone() for b in BATCHES])))


def _marked_step(x):
    """step where torch.compile traced it, step + 100 where it ran eagerly: dynamo traces
    is_compiling() as True into the graph, a plain call of the function sees False."""
    out = step(x)
    return out if torch.compiler.is_compiling() else out + 100.0


def compiled_batches(run_all):
    """How many of BATCHES run_all ran through the compiled function (not fn itself)."""
    dynamo.reset()
    outs = list(run_all(_marked_step, [b.clone() for b in BATCHES]))
    through = 0
    for out, b in zip(outs, BATCHES):
        if isinstance(out, torch.Tensor) and out.shape == (b.shape[0], W.shape[1]):
            through += bool(torch.allclose(out, step(b), rtol=1e-5, atol=1e-4))
    return f"{through} of {len(BATCHES)}"


# for the feedback only
def _graphs(run_all):
    try:
        return graphs_compiled(run_all)
    except Exception:
        return -1


def _other_fn(x):
    """Another function, for the check that run_all compiles the fn it is given."""
    return torch.cos(x) * 3


with torch.random.fork_rng(devices=[]):
    torch.manual_seed(11)
    _OTHER = [torch.randn(n, 5) for n in (5, 7, 9)]


def other_outputs(run_all):
    """run_all's outputs for another fn on other batches, flattened and joined."""
    dynamo.reset()
    return torch.cat([o.flatten() for o in run_all(_other_fn, [b.clone() for b in _OTHER])])


def _error(run_all):
    try:
        graphs_compiled(run_all)
    except Exception as exc:
        return str(exc)
    return ""
