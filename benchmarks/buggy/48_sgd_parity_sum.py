# exercise: numpy-parity/grad-parity
# bug: the NumPy gradient forgets the 1/size of the mean
# named-by: times|mean
import numpy as np
import torch

R = X @ W + b - Y
G = 2 * R
dW_np = X.T @ G
db_np = G.sum(axis=0)

W_t = torch.from_numpy(W).requires_grad_()
b_t = torch.from_numpy(b).requires_grad_()
loss_t = ((torch.from_numpy(X) @ W_t + b_t - torch.from_numpy(Y)) ** 2).mean()
loss_t.backward()
