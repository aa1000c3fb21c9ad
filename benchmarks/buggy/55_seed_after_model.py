# exercise: debugging-lab/invisible-layers
# bug: the model is built before torch.manual_seed, so its initial weights differ
# named-by: before it calls torch.manual_seed
import torch
import torch.nn.functional as F
from torch import nn


class MLP(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = torch.relu(x)
        return x


model = MLP([4, 16, 16, 3]).to(DEVICE)
torch.manual_seed(0)
opt = torch.optim.Adam(model.parameters(), lr=0.01)

losses = []
for step in range(30):
    opt.zero_grad()
    loss = F.cross_entropy(model(X), y)
    loss.backward()
    opt.step()
    losses.append(loss.item())
