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


def _fails_off_cpu_only(fn):
    """Whether fn works on CPU inputs but not on meta ones of the same shapes: what fails
    is where its tensors live, not its arithmetic."""
    try:
        fn(torch.randn(2, 4, 3), torch.tensor([1, 3]))
    except Exception:
        return False
    return not _on_meta(fn)


def _dtype_for_bfloat16(fn):
    x = torch.randn(2, 4, 3).to(torch.bfloat16).to(DEVICE)
    lengths = torch.tensor([1, 3], device=DEVICE)
    try:
        return fn(x, lengths).dtype
    except Exception:
        return None
