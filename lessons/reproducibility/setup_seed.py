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


def _how_seeded(seed_everything, seed, which):
    """For the mistakes: what one call of seed_everything(seed) did to one generator.

    'untouched': the next draw is the one the scrambled generator gives without the call
    (not seeded, at least not on this call); 'other': the generator was changed, but its
    next draw is not the one seeding it with `seed` gives (another seed, or draws after
    seeding); 'right': it is; None: the call raised.
    """
    scrambled, seeded = _next_draws(12345, 54321, 999), _next_draws(seed, seed, seed)
    try:
        got = draws_after(seed_everything, seed)[which]
    except Exception:
        return None
    if got == seeded[which]:
        return "right"
    if got == scrambled[which]:
        return "untouched"
    # seeded with seed + k for one small k, for this seed and another alike (seed + 1,
    # seed - 2, ...): a seed derived from seed, not a fixed number
    for k in _OFFSETS:
        if got == _next_draws(seed + k, seed + k, seed + k)[which]:
            try:
                again = draws_after(seed_everything, seed + 100)[which]
            except Exception:
                return "other"
            return "offset" if again == _next_draws(seed + 100 + k, seed + 100 + k, seed + 100 + k)[which] else "other"
    return "other"


_OFFSETS = [k for k in range(-5, 6) if k != 0]


def _next_draws(random_seed, numpy_seed, torch_seed):
    """The first draw of each generator after seeding it, leaving all three as they were."""
    r, n, t = random.getstate(), np.random.get_state(), torch.get_rng_state()
    try:
        random.seed(random_seed)
        np.random.seed(numpy_seed)
        torch.manual_seed(torch_seed)
        return {"random": random.random(), "numpy": float(np.random.rand()), "torch": torch.rand(1).item()}
    finally:
        random.setstate(r)
        np.random.set_state(n)
        torch.set_rng_state(t)


def _all_untouched(seed_everything, seed):
    return all(_how_seeded(seed_everything, seed, w) == "untouched" for w in ("random", "numpy", "torch"))


def cuda_seeding(seed_everything, seed):
    """What one call of seed_everything(seed) asked of the CUDA generators, read through
    torch.cuda.manual_seed_all (torch.manual_seed calls it; without a GPU torch keeps the
    seed until CUDA starts), so a machine with no GPU tells too."""
    import torch.cuda

    real = torch.cuda.manual_seed_all
    seen = []

    def spy(s):
        seen.append(int(s))
        return real(s)

    torch.cuda.manual_seed_all = spy
    try:
        seed_everything(seed)
    finally:
        torch.cuda.manual_seed_all = real
    if seed in seen:
        return "every CUDA device's generator seeded with seed"
    if seen:
        return "CUDA generators seeded with another number"
    return "CUDA generators not seeded"
