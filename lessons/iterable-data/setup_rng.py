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


# for the feedback only: which generator the workers' noise came from
def _noise_of(seed_of):
    """The noise of a run with the first seed where each worker's copy gets
    np.random.default_rng(seed_of(info)), info being that worker's get_worker_info()."""

    def init(worker_id):
        info = get_worker_info()
        info.dataset.rng = np.random.default_rng(seed_of(info))

    return run(init)


def _drew_like(worker_init_fn, *seed_ofs):
    """Whether the learner's run drew exactly the noise of one of these seedings."""
    try:
        got = run(worker_init_fn)
        return any(torch.equal(got, _noise_of(seed_of)) for seed_of in seed_ofs)
    except Exception:
        return False


def _init_generator_kept(worker_init_fn):
    # both workers drew the noise of default_rng(0), the generator __init__ made
    return _drew_like(worker_init_fn, lambda info: 0)


def _base_seed_in_both(worker_init_fn):
    # both workers drew the noise of default_rng(the loader's base seed): info.seed - info.id
    return _drew_like(worker_init_fn, lambda info: info.seed - info.id, lambda info: (info.seed - info.id) % 2**32)


def _id_counted_twice(worker_init_fn):
    # worker k drew the noise of default_rng(info.seed + k): the worker id added to a seed that holds it
    return _drew_like(worker_init_fn, lambda info: info.seed + info.id, lambda info: (info.seed + info.id) % 2**32)


def _same_noise_changed(worker_init_fn):
    # the two workers drew the same noise, and not the noise of default_rng(0)
    return _safe(workers_differ, worker_init_fn) is False and not _init_generator_kept(worker_init_fn)


def _worker_id_only(worker_init_fn):
    # each worker drew the noise of default_rng(its worker id)
    return _drew_like(worker_init_fn, lambda info: info.id)
