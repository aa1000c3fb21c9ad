import torch
from torch import nn

model = make_model()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
loss_fn = nn.MSELoss()

losses, grad_norms = [], []
for step in range(60):
    loss = loss_fn(model(X), y)
    loss.backward()
    grad_norms.append(model.weight.grad.norm().item())
    opt.step()
    losses.append(loss.item())

print("loss      ", [round(v, 3) for v in losses[::10]])
print("grad norm ", [round(v, 2) for v in grad_norms[::10]])
