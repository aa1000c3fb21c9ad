import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info


class NoisyStream(IterableDataset):
    """Three noisy samples per worker, the noise drawn from the dataset's own generator."""

    def __init__(self):
        self.rng = np.random.default_rng(0)

    def __iter__(self):
        info = get_worker_info()
        worker = info.id if info is not None else 0
        for _ in range(3):
            yield worker, float(self.rng.normal())


# the loader seeds of two runs, drawn from torch's generator (other ones on other data)
_SEEDS = torch.randint(0, 2**31, (2,))


def draws(worker_init_fn, seed):
    """The noise each of two workers drew, with the loader's generator seeded with seed."""
    loader = DataLoader(
        NoisyStream(),
        batch_size=None,
        num_workers=2,
        worker_init_fn=worker_init_fn,
        generator=torch.Generator().manual_seed(int(seed)),
    )
    noise = [[], []]
    for worker, value in loader:
        noise[int(worker)].append(float(value))
    return torch.tensor(noise, dtype=torch.float64)


def run(worker_init_fn):
    """The noise of a run with the first seed."""
    return draws(worker_init_fn, _SEEDS[0])


def workers_differ(worker_init_fn):
    """Whether the two workers drew different noise."""
    noise = run(worker_init_fn)
    return not torch.equal(noise[0], noise[1])


def repeats(worker_init_fn):
    """Whether two runs with the same loader seed drew the same noise."""
    return torch.equal(run(worker_init_fn), run(worker_init_fn))


def follows_seed(worker_init_fn):
    """Whether runs with two different loader seeds drew different noise."""
    return not torch.equal(run(worker_init_fn), draws(worker_init_fn, _SEEDS[1]))


def _safe(fn, worker_init_fn):
    try:
        return fn(worker_init_fn)
    except Exception:
        return None


def _reference_init(mod):
    # a known-good worker_init_fn: this worker's copy gets default_rng of its torch seed (taken modulo mod)
    def init(worker_id):
        info = get_worker_info()
        info.dataset.rng = np.random.default_rng(info.seed if mod is None else info.seed % mod)

    return init


def seeded_from_worker_seed(worker_init_fn):
    """Whether each worker drew the noise of np.random.default_rng(get_worker_info().seed), or of that
    seed % 2**32 (the idiom of torch's reproducibility notes, torch.initial_seed() % 2**32)."""
    got = run(worker_init_fn)
    return any(torch.equal(got, run(_reference_init(mod))) for mod in (None, 2**32))
