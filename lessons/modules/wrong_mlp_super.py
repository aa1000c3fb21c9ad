import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self, *sizes):
        self.layers = nn.ModuleList(
            nn.Linear(n_in, n_out) for n_in, n_out in zip(sizes[:-1], sizes[1:])
        )
        super().__init__()

    def forward(self, x):
        x = x.flatten(1)
        for layer in self.layers[:-1]:
            x = torch.relu(layer(x))
        return self.layers[-1](x)


model = MLP(784, 128, 64, 10).to(DEVICE)
