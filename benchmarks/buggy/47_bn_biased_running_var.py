# exercise: train-eval/batchnorm-by-hand
# bug: the running variance uses the biased variance
# named-by: unbiased|biased|Bessel
import torch

eps = 1e-5
mean = x.mean(dim=0)
var_biased = x.var(dim=0, unbiased=False)

rm = 0.9 * torch.zeros(3, device=DEVICE) + 0.1 * mean
rv = 0.9 * torch.ones(3, device=DEVICE) + 0.1 * var_biased

y_train = (x - mean) / torch.sqrt(var_biased + eps)
y_eval = (x - rm) / torch.sqrt(rv + eps)
