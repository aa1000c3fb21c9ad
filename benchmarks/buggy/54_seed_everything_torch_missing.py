# exercise: reproducibility/seed-everything
# bug: forgets to seed torch
# named-by: torch.manual_seed
import random

import numpy as np


def seed_everything(seed):
    random.seed(seed)
    np.random.seed(seed)
