import torch
from torch import nn

# an encoder on DEVICE (float32 weights) and a batch of inputs; sizes drawn too
_D = int(torch.randint(6, 12, ()))
encoder = nn.Sequential(nn.Linear(_D, 32), nn.Tanh(), nn.Linear(32, 16)).to(DEVICE)
x = torch.randn(int(torch.randint(8, 16, ())), _D, device=DEVICE)
