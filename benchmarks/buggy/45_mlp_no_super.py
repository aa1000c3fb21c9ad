# exercise: modules/mlp
# bug: forgets super().__init__()
# named-by: super\(\).__init__
import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self, *sizes):
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))

    def forward(self, x):
        x = x.flatten(1)
        for layer in self.layers[:-1]:
            x = torch.relu(layer(x))
        return self.layers[-1](x)


model = MLP(784, 128, 64, 10).to(DEVICE)
