import numpy as np
import torch
from torch import nn

rng = np.random.default_rng(0)
X = rng.normal(size=(16, 3))     # inputs, float64
Y = rng.normal(size=(16, 2))     # targets
W = rng.normal(size=(3, 2))      # weights, NumPy convention: P = X @ W + b
b = rng.normal(size=2)           # bias
lr = 0.1
