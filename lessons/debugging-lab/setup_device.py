import torch


def _meta_error(fn):
    """What fn raises on meta logits and targets (the stand-in for a GPU), or "" if nothing."""
    try:
        fn(torch.empty(4, 3, device="meta"), torch.empty(4, dtype=torch.long, device="meta"))
        return ""
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


def _runs_on_meta(fn):
    return not _meta_error(fn)


def _mixes_devices(fn):
    # "Tensor on device cpu is not on the expected device meta!": a tensor made on the CPU met the logits
    return "not on the expected device" in _meta_error(fn) or "same device" in _meta_error(fn)


def _error_in(fn, dtype):
    try:
        fn(torch.randn(4, 3, dtype=dtype, device=DEVICE), torch.tensor([0, 1, 2, 0], device=DEVICE))
        return ""
    except Exception as exc:
        return str(exc)


def _runs_in_float64(fn):
    return not _error_in(fn, torch.float64)


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
