import torch
from torch import nn

# two features of mean about 5 and std about 2; the third of mean about 0 and a tiny std (about
# 0.003), so its variance is near eps and leaving eps out shows
x = torch.randn(8, 3, device=DEVICE) * torch.tensor([2.0, 2.0, 0.003], device=DEVICE) + torch.tensor([5.0, 5.0, 0.0], device=DEVICE)
bn = nn.BatchNorm1d(3).to(DEVICE)

# The checks' own record of every call of bn, kept as it happens: a call counts even where the
# code sets bn's buffers (running_mean, running_var, num_batches_tracked) back afterwards.
_bn_calls = []
_BN = bn  # the module itself, whatever the name bn is bound to later
_bn_hook = _BN.register_forward_pre_hook(lambda module, args: _bn_calls.append(1))


def _bn_record_kept():
    # the checks' helper: is the pre-hook that counts bn's calls still on bn?
    return _bn_hook.id in _BN._forward_pre_hooks
