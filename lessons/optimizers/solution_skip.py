import torch.nn.functional as F


def step_a(model, opt, x, y):
    opt.zero_grad()  # set_to_none=True (the default): head b's grads become None, so Adam skips it
    loss = F.mse_loss(model(x), y)
    loss.backward()
    opt.step()
