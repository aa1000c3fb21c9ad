import torch

_N, _N_VAL, _SEED = 10, 3, 0  # the split the first two checks ask for


def _global_states():
    """The default CPU generator's state and, on a GPU machine, every CUDA device's."""
    states = [torch.get_rng_state()]   # CPU only: CUDA draws leave it alone
    if torch.cuda.is_available():
        states += torch.cuda.get_rng_state_all()
    return states


def global_rng_untouched(split_indices):
    """split_indices neither reseeds nor draws from a global torch RNG (CPU or CUDA)."""
    torch.manual_seed(12345)          # a state that no seed 0 could produce
    before = _global_states()
    split_indices(10, 3, 0)
    after = _global_states()
    return len(before) == len(after) and all(torch.equal(a, b) for a, b in zip(before, after))


def _how_it_uses_global(split_indices):
    try:
        torch.manual_seed(1)
        a = split_indices(10, 3, 0)
        torch.manual_seed(2)
        b = split_indices(10, 3, 0)
        touched = not global_rng_untouched(split_indices)
        if not all(torch.equal(u, v) for u, v in zip(a, b)):
            # another split for the same arguments: from the global stream, or from a
            # generator of its own that keeps its state from call to call
            return "draws" if touched else "own-stream"
        if touched:
            return "reseeds"     # repeatable only by resetting the global stream
    except Exception:
        pass
    return None
