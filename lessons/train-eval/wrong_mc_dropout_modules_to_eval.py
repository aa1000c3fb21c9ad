# WRONG: switches only the Dropout modules to train and afterwards forces them back to eval, so a model that was TRAINING comes back with its dropout layer switched off (model.training still reads True)
import torch
from torch import nn


def mc_predict(model, x, n):
    drops = [m for m in model.modules() if isinstance(m, nn.Dropout)]
    for m in drops:
        m.train()
    with torch.no_grad():
        samples = [model(x).softmax(dim=1) for _ in range(n)]
    for m in drops:
        m.eval()
    return torch.stack(samples).mean(dim=0)


probs = mc_predict(model, x, 400)
