# WRONG: compiles with backend="eager" instead of the asked "aot_eager", so the backward pass is never traced/compiled and the comparison tests nothing about compiled gradients
import torch


def both_grads(model, x):
    model.eval()
    compiled = torch.compile(model, backend="eager")
    model.zero_grad()
    model(x).square().mean().backward()
    eager = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    compiled(x).square().mean().backward()
    graphed = [p.grad.clone() for p in model.parameters()]
    torch.testing.assert_close(graphed, eager)
    return eager, graphed


eager, graphed = both_grads(model, x)
