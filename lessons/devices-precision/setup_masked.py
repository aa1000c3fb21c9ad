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


def _made_tensors_follow_x(fn):
    """Whether fn's result stays on x's device when the default device is another one
    (meta): a tensor made without device= (torch.arange(T), torch.zeros(B, D)) lands on
    the default device, so this shows it on any machine, even for code that reads values
    and so cannot run on meta itself."""
    dev = DEVICE if torch.device(DEVICE).type != "meta" else "cpu"   # real values: loops read them
    x = torch.randn(2, 4, 3, device=dev)
    lengths = torch.tensor([1, 3], device=dev)
    try:
        with torch.device("meta"):
            out = fn(x, lengths)
    except Exception as e:
        return f"raised {type(e).__name__} with the default device set to meta"
    if not isinstance(out, torch.Tensor):
        return f"returned a {type(out).__name__}"
    return "on x's device" if out.device == x.device else f"on {out.device.type}, not on x's device"
