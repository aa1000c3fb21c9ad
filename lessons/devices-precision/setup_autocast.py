import torch
from torch import nn

model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)).to(DEVICE)
x = torch.randn(4, 8, device=DEVICE)
y = torch.tensor([0, 2, 1, 2], device=DEVICE)
