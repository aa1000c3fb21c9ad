import numpy as np
import torch
from torch import nn


def numpy_step(W, b, X, Y, lr):
    # NumPy: the gradient by hand, then one SGD step
    R = X @ W + b - Y
    G = 2 * R / R.size
    W_next = W - lr * (X.T @ G)
    b_next = b - lr * G.sum(axis=0)
    return W_next, b_next


# torch: the same model as an nn.Linear, in float64
layer = nn.Linear(3, 2).double()
with torch.no_grad():
    layer.weight.copy_(torch.from_numpy(W.T))   # nn.Linear stores (out, in)
    layer.bias.copy_(torch.from_numpy(b))
opt = torch.optim.SGD(layer.parameters(), lr=lr)
# a new layer has no .grad yet, so there is nothing to zero before this one backward()
loss = nn.MSELoss()(layer(torch.from_numpy(X)), torch.from_numpy(Y))
loss.backward()
opt.step()
