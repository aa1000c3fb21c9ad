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
    """Whether fn's result stays on x's device when the default device is another one: a
    tensor made without device= (torch.arange(T), torch.zeros(B, D)) lands on the default
    device. x is on meta and the default device is the CPU first, so a tensor made there
    and moved with .to(x.device) follows x as it would to a GPU. Code that reads values
    cannot run on meta: for it, x holds values and the default device is meta instead."""
    x = torch.randn(2, 4, 3, device="meta")
    lengths = torch.tensor([1, 3]).to("meta")
    try:
        with torch.device("cpu"):
            out = fn(x, lengths)
    except Exception as e:
        try:
            with torch.device("meta"):
                fn(x, lengths)
        except Exception:  # it cannot run on meta at all: it reads values
            return _follows_x_with_values(fn)
        return f"raised {type(e).__name__} with x on another device than the default one"
    return _where(out, x)


def _follows_x_with_values(fn):
    dev = DEVICE if torch.device(DEVICE).type != "meta" else "cpu"
    x = torch.randn(2, 4, 3, device=dev)
    lengths = torch.tensor([1, 3], device=dev)
    try:
        with torch.device("meta"):
            out = fn(x, lengths)
    except Exception as e:
        try:
            fn(x, lengths)
        except Exception:  # not the default device's doing: it raises on x's device alone too
            return f"raised {type(e).__name__} whatever the default device"
        if "copy out of meta" in str(e):
            # A tensor made on the default device and moved (.to(x.device)) cannot leave
            # meta: where it would have gone is not known here, so nothing is claimed.
            return "on x's device, as far as can be told"
        return f"raised {type(e).__name__} with the default device set to meta"
    return _where(out, x)


def _where(out, x):
    if not isinstance(out, torch.Tensor):
        return f"returned a {type(out).__name__}"
    return "on x's device" if out.device == x.device else f"on {out.device.type}, not on x's device"


def _steps_averaged(fn):
    """Which steps fn's row i adds up, and what it divides by, read off x[i, t] = 2**t (each
    set of steps has its own sum): 'one past the end, divided by lengths' and the like, or
    '' when the result fits no such reading."""
    lengths = torch.tensor([2, 3])
    x = (2.0 ** torch.arange(5, dtype=torch.float64)).expand(2, 5).unsqueeze(-1).contiguous()
    try:
        out = fn(x, lengths).double().reshape(2)
    except Exception:
        return ""
    readings = {
        "one past the end, divided by lengths": lambda n: (2.0 ** (n + 1) - 1) / n,
        "one past the end, divided by lengths + 1": lambda n: (2.0 ** (n + 1) - 1) / (n + 1),
        "one short of the end, divided by lengths": lambda n: (2.0 ** (n - 1) - 1) / n,
        "every step, divided by lengths": lambda n: (2.0**5 - 1) / n,
        "every step, divided by T": lambda n: (2.0**5 - 1) / 5,
        # every row over the longest sequence's steps (x[:, :lengths.max()].mean(dim=1))
        "the longest length's steps for every row, divided by the longest length": lambda n: (2.0**3 - 1) / 3,
    }
    for name, value in readings.items():
        want = torch.tensor([value(2), value(3)], dtype=torch.float64)
        if torch.allclose(out, want, rtol=1e-6):
            return name
    return ""
