# exercise: debugging-lab/invisible-layers
# bug: the layers are kept in a plain Python list, so they are not registered
# source: "an unregistered layer is not optimised"
# cues: ModuleList|not registered|plain list|unregistered
import torch
import torch.nn.functional as F
from torch import nn


class MLP(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.layers = []
        for a, b in zip(sizes[:-1], sizes[1:]):
            self.layers.append(nn.Linear(a, b))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = torch.relu(x)
        return x


torch.manual_seed(0)
model = MLP([4, 16, 16, 3]).to(DEVICE)
opt = torch.optim.Adam(model.parameters(), lr=0.01)

losses = []
for step in range(30):
    opt.zero_grad()
    loss = F.cross_entropy(model(X), y)
    loss.backward()
    opt.step()
    losses.append(loss.item())
