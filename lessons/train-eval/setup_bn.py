import torch
from torch import nn

# two features of mean about 5 and std about 2; the third of mean about 0 and a tiny std (about
# 0.003), so its variance is near eps and leaving eps out shows
x = torch.randn(8, 3, device=DEVICE) * torch.tensor([2.0, 2.0, 0.003], device=DEVICE) + torch.tensor([5.0, 5.0, 0.0], device=DEVICE)
bn = nn.BatchNorm1d(3).to(DEVICE)
