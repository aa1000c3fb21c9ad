# exercise: reproducibility/seed-everything
# bug: forgets to seed NumPy
# named-by: np.random.seed
import random

import torch


def seed_everything(seed):
    random.seed(seed)
    torch.manual_seed(seed)
