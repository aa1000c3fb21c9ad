# WRONG: switches grad mode with a plain statement and then forces it back to True, instead of restoring the caller's previous mode; a caller inside torch.no_grad() comes out with autograd switched ON
import torch


def run(model, x, training):
    model.train(training)
    torch.set_grad_enabled(training)
    out = model(x)
    torch.set_grad_enabled(True)
    return out
