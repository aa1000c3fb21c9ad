import torch


def both_grads(model, x):
    model.eval()  # dropout off: otherwise each run drops other units and nothing can match
    compiled = torch.compile(model, backend="aot_eager")

    model.zero_grad()  # the model still holds an earlier step's gradients
    model(x).square().mean().backward()
    eager = [p.grad for p in model.parameters()]

    # the compiled module shares model's parameters: clear their .grad (zero_grad sets it
    # to None, so the tensors kept in eager stay as they are), or the second backward adds
    # to the first
    model.zero_grad()
    compiled(x).square().mean().backward()
    graphed = [p.grad for p in model.parameters()]

    torch.testing.assert_close(graphed, eager)
    return eager, graphed


eager, graphed = both_grads(model, x)
