# WRONG: forgets batch norm's eps (1e-5) in both normalisations: divides by sqrt(var) instead of sqrt(var + eps)
import torch

mean = x.mean(0)
vb = x.var(0, unbiased=False)
vu = x.var(0, unbiased=True)
y_train = (x - mean) / torch.sqrt(vb)
rm = 0.1 * mean
rv = 0.9 + 0.1 * vu
y_eval = (x - rm) / torch.sqrt(rv)
