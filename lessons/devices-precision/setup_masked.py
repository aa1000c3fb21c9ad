import torch


def _on_meta(fn):
    """Whether fn runs with meta inputs (as it would have to on any other device)."""
    x = torch.empty(2, 4, 3, device="meta")
    lengths = torch.empty(2, dtype=torch.long, device="meta")
    try:
        fn(x, lengths)
        return True
    except Exception:
        return False


def _dtype_for_bfloat16(fn):
    x = torch.randn(2, 4, 3).to(torch.bfloat16).to(DEVICE)
    lengths = torch.tensor([1, 3], device=DEVICE)
    try:
        return fn(x, lengths).dtype
    except Exception:
        return None
