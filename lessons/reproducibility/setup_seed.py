import random

import numpy as np
import torch

_SEED = 7  # the seed the checks pass to seed_everything


def draws_after(seed_everything, seed):
    """Scramble every RNG, call seed_everything(seed), then draw once from each."""
    random.seed(12345)
    np.random.seed(54321)
    torch.manual_seed(999)
    seed_everything(seed)
    return {
        "random": random.random(),
        "numpy": float(np.random.rand()),
        "torch": torch.rand(1).item(),
    }
