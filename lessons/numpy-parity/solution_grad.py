import numpy as np
import torch

# by hand, in NumPy
R = X @ W + b - Y
G = 2 * R / R.size          # dL/dP: the mean is over all N * K entries
dW_np = X.T @ G
db_np = G.sum(axis=0)

# with autograd, in float64
W_t = torch.from_numpy(W).requires_grad_()
b_t = torch.from_numpy(b).requires_grad_()
loss_t = ((torch.from_numpy(X) @ W_t + b_t - torch.from_numpy(Y)) ** 2).mean()
loss_t.backward()
