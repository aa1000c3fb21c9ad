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
