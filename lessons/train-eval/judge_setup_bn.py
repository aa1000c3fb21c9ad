import copy

import torch

# The judge's alone (the learner's kernel never runs this): what torch really does, on a
# copy of bn, for the checks and the feedback.
_bn = copy.deepcopy(bn)
with torch.no_grad():
    _truth_y_train = _bn(x)
    _truth_rm = _bn.running_mean.clone()
    _truth_rv = _bn.running_var.clone()
    _bn.eval()
    _truth_y_eval = _bn(x)
_mean, _vb, _vu = x.mean(0), x.var(0, unbiased=False), x.var(0, unbiased=True)
