import torch
from torch import nn


def _losses_without_zero_grad():
    """For the mistakes: the loss curve of this script as it came, zero_grad() left out."""
    with torch.random.fork_rng(devices=[]):  # make_model seeds: the judge's own draws stay as they were
        model = make_model()
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        curve = []
        for _ in range(60):
            loss = nn.functional.mse_loss(model(X), y)
            loss.backward()
            opt.step()
            curve.append(loss.item())
    return curve
