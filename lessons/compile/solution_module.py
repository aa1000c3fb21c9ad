import torch


def both_grads(model, x):
    model.eval()  # dropout off: otherwise each run drops other units and nothing can match
    compiled = torch.compile(model, backend="aot_eager")

    model.zero_grad()
    model(x).square().mean().backward()
    eager = [p.grad.clone() for p in model.parameters()]

    # the compiled module shares model's parameters: clear their .grad, or the second
    # backward adds to the first
    model.zero_grad()
    compiled(x).square().mean().backward()
    graphed = [p.grad.clone() for p in model.parameters()]

    for e, c in zip(eager, graphed):
        torch.testing.assert_close(c, e)
    return eager, graphed


eager, graphed = both_grads(model, x)
