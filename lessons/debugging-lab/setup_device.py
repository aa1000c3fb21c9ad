import torch


def _runs_on_meta(fn):
    try:
        fn(torch.empty(4, 3, device="meta"), torch.empty(4, dtype=torch.long, device="meta"))
        return True
    except Exception:
        return False


def _runs_in_float64(fn):
    try:
        fn(torch.randn(4, 3, dtype=torch.float64, device=DEVICE), torch.tensor([0, 1, 2, 0], device=DEVICE))
        return True
    except Exception:
        return False


def _plain_mean_of_weighted(fn):
    """Whether fn returns the plain mean of the weighted per-row losses (not cross_entropy's weighted mean)."""
    import torch.nn.functional as F

    g = torch.Generator().manual_seed(3)
    _lg = torch.randn(6, 3, generator=g)
    _tg = torch.tensor([0, 1, 2, 2, 1, 0])
    w = torch.tensor([1.0, 1.0, 3.0])
    try:
        out = fn(_lg.to(DEVICE), _tg.to(DEVICE)).detach().cpu().float()
    except Exception:
        return False
    plain = (F.cross_entropy(_lg, _tg, reduction="none") * w[_tg]).mean()
    weighted = F.cross_entropy(_lg, _tg, weight=w)
    return bool(torch.allclose(out, plain)) and not bool(torch.allclose(out, weighted))
