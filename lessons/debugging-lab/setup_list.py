import torch
from torch import nn

X = torch.randn(64, 4, device=DEVICE)
y = (X[:, 0] > 0).long() + (X[:, 1] > 0).long()   # 3 classes
