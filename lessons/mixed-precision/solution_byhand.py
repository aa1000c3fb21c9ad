import torch


def scaled_step(model, opt, loss_fn, scale):
    opt.zero_grad()
    (loss_fn(model) * scale).backward()  # small gradients, multiplied, survive float16
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    if not all(torch.isfinite(g).all() for g in grads):
        return False  # the scale overflowed: skip this step (the next call clears the grads)
    for g in grads:
        g.div_(scale)  # the optimizer must see the true gradients
    opt.step()
    return True
