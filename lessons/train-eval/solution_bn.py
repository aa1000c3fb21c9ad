import torch

eps = 1e-5
mean = x.mean(dim=0)
var_biased = x.var(dim=0, unbiased=False)
var_unbiased = x.var(dim=0, unbiased=True)

# running statistics start at mean 0 and variance 1, momentum 0.1
rm = 0.9 * torch.zeros(3, device=DEVICE) + 0.1 * mean
rv = 0.9 * torch.ones(3, device=DEVICE) + 0.1 * var_unbiased

# train mode: the batch's own statistics (biased variance); weight 1, bias 0
y_train = (x - mean) / torch.sqrt(var_biased + eps)
# eval mode afterwards: the running statistics
y_eval = (x - rm) / torch.sqrt(rv + eps)
