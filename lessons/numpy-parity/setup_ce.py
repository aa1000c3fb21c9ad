import numpy as np
import torch

# logits of N examples over C classes, float64, and integer labels; sizes drawn too
_N = int(torch.randint(6, 12, ()))
_C = int(torch.randint(3, 6, ()))
Z = (3 * torch.randn(_N, _C, dtype=torch.float64)).numpy()
Z[0] += 1000.0  # one very confident example: exp(1000) overflows float64
y = torch.randint(0, _C, (_N,)).numpy()  # int64, what cross_entropy takes as class indices
