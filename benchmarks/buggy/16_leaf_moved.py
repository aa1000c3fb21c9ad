# exercise: tensors/leaf-parameter
# bug: weights made requiring grad, then converted: the result is no longer a leaf
# named-by: leaf
import torch

w = torch.randn(3, 2, requires_grad=True).to(DEVICE, torch.float64).float() * 0.01
loss = (x @ w).sum()
loss.backward()
