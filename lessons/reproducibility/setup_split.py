import torch


def global_rng_untouched(split_indices):
    """split_indices neither reseeds nor draws from the global torch RNG."""
    torch.manual_seed(12345)          # a state that no seed 0 could produce
    before = torch.get_rng_state()
    split_indices(10, 3, 0)
    return torch.equal(before, torch.get_rng_state())


def _how_it_uses_global(split_indices):
    try:
        torch.manual_seed(1)
        a = split_indices(10, 3, 0)
        torch.manual_seed(2)
        b = split_indices(10, 3, 0)
        if not all(torch.equal(u, v) for u, v in zip(a, b)):
            return "draws"       # the result depends on the global stream
        if not global_rng_untouched(split_indices):
            return "reseeds"     # repeatable only by resetting the global stream
    except Exception:
        pass
    return None
