import torch
import torch._dynamo as dynamo


def clipped_scale_eager(x):
    """The function to rewrite: it works, but torch.compile splits it into pieces."""
    m = x.abs().max()
    print("max:", m)  # logging in the middle of the model
    if m > 1:  # a Python branch on a tensor's value
        x = x / m
    return 2 * x


# inputs of the example: some rows with a peak above 1, some below
X = torch.randn(6) * torch.rand(()) * 2


def explain_counts(fn):
    """(graph_count, graph_break_count) of torch._dynamo.explain on fn, on the example's x."""
    report = dynamo.explain(fn)(X.clone())
    return report.graph_count, report.graph_break_count


def compiled_output(fn):
    """fn compiled as one graph (backend="eager", fullgraph=True), on the example's x: what the
    graph computes, which must be what fn computes eagerly."""
    dynamo.reset()
    return torch.compile(fn, backend="eager", fullgraph=True)(X.clone())


# for the feedback only: the reasons dynamo gives for each break, in one string
def _reasons(fn):
    try:
        return " ".join(str(r.reason) for r in dynamo.explain(fn)(X.clone()).break_reasons)
    except Exception:
        return ""


def _half(fn):
    try:
        m = X.abs().max()
        return torch.allclose(fn(X.clone()), torch.where(m > 1, X / m, X))
    except Exception:
        return False
