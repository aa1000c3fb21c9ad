# WRONG: zero_grad(set_to_none=False) zeroes the SAME .grad tensors in place, so `eager` and `graphed` alias one set of tensors; assert_close compares a list with itself and could never fail
import torch


def both_grads(model, x):
    model.eval()
    compiled = torch.compile(model, backend="aot_eager")
    model.zero_grad(set_to_none=False)
    model(x).square().mean().backward()
    eager = [p.grad for p in model.parameters()]
    model.zero_grad(set_to_none=False)
    compiled(x).square().mean().backward()
    graphed = [p.grad for p in model.parameters()]
    torch.testing.assert_close(graphed, eager)
    return eager, graphed


eager, graphed = both_grads(model, x)
