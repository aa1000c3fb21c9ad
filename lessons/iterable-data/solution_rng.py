import numpy as np
from torch.utils.data import get_worker_info


def worker_init_fn(worker_id):
    info = get_worker_info()
    # this worker's copy of the dataset gets a generator of its own: info.seed is
    # base_seed + worker_id, and base_seed comes from the loader's generator
    info.dataset.rng = np.random.default_rng(info.seed)
