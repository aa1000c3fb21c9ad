# exercise: autograd/two-leaves
# bug: b does not require grad
# named-by: requires_grad
import torch

a = torch.tensor(2.0, device=DEVICE, requires_grad=True)
b = torch.tensor(3.0, device=DEVICE)
c = a * b + b ** 2
c.backward()
