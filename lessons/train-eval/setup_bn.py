import copy

import torch
from torch import nn

# two features of mean about 5 and std about 2; the third of mean about 0 and a tiny std (about
# 0.003), so its variance is near eps and leaving eps out shows
x = torch.randn(8, 3, device=DEVICE) * torch.tensor([2.0, 2.0, 0.003], device=DEVICE) + torch.tensor([5.0, 5.0, 0.0], device=DEVICE)
bn = nn.BatchNorm1d(3).to(DEVICE)

# what torch really does, on a copy of bn
_bn = copy.deepcopy(bn)
with torch.no_grad():
    _truth_y_train = _bn(x)
    _truth_rm = _bn.running_mean.clone()
    _truth_rv = _bn.running_var.clone()
    _bn.eval()
    _truth_y_eval = _bn(x)
_mean, _vb, _vu = x.mean(0), x.var(0, unbiased=False), x.var(0, unbiased=True)
