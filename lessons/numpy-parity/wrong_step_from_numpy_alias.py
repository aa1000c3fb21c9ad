# WRONG: the layer's weight is a Parameter made with torch.from_numpy(W.T), which SHARES memory with the setup's NumPy W; opt.step() therefore rewrites W (and b) in place, so the "original" weights are gone
import numpy as np
import torch
from torch import nn


def numpy_step(W, b, X, Y, lr):
    G = 2 * (X @ W + b - Y) / Y.size
    return W - lr * X.T @ G, b - lr * G.sum(axis=0)


layer = nn.Linear(3, 2).double()
layer.weight = nn.Parameter(torch.from_numpy(W.T))
layer.bias = nn.Parameter(torch.from_numpy(b))
opt = torch.optim.SGD(layer.parameters(), lr=lr)
nn.MSELoss()(layer(torch.from_numpy(X)), torch.from_numpy(Y)).backward()
opt.step()
