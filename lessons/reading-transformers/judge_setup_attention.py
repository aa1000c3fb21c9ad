import torch
import torch.nn.functional as F


def _oracle(q, k, v, keep):
    # torch's own attention: a boolean attn_mask is True where a query may attend
    return F.scaled_dot_product_attention(q, k, v, attn_mask=keep)


# The judge's alone (the learner's kernel never runs this): torch's attention, and the usual slips, compared with your attention on inputs drawn here
def _slip(
    q, k, v, keep, scale="sqrt", dim=-1, inverted=False, fill=float("-inf"), after_softmax=False, swapped=False,
    masked=True, mask_transposed=False,
):
    scores = k @ q.transpose(-2, -1) if swapped else q @ k.transpose(-2, -1)
    if scale == "sqrt":
        scores = scores / q.shape[-1] ** 0.5
    elif scale == "times":  # multiplied by sqrt(d) instead of divided
        scores = scores * q.shape[-1] ** 0.5
    elif scale == "d":
        scores = scores / q.shape[-1]
    elif scale == "T":  # the number of tokens instead of the head width
        scores = scores / q.shape[-2] ** 0.5
    if not masked:  # every key allowed: the mask never reached the scores
        return scores.softmax(dim=dim) @ v
    if mask_transposed:  # keep[j, i] used for query i and key j
        keep = keep.transpose(-2, -1)
    blocked = keep if inverted else ~keep
    if after_softmax:  # the blocked weights zeroed after the softmax, not renormalised
        return scores.softmax(dim=dim).masked_fill(blocked, 0.0) @ v
    scores = scores.masked_fill(blocked, fill)
    return scores.softmax(dim=dim) @ v


_INPUTS = [torch.randn(2, 2, 5, 4) for _ in range(3)] + [(torch.randn(5, 5) > 0) | torch.eye(5, dtype=torch.bool)]


def _like(attention, **slip):
    try:
        return torch.allclose(attention(*_INPUTS), _slip(*_INPUTS, **slip), atol=1e-5, equal_nan=True)
    except Exception:
        return False


def _overflows(attention):
    # right on ordinary scores, yet nan or inf on scores in the hundreds where torch's attention is finite
    try:
        big = [_INPUTS[0] * 20, _INPUTS[1] * 20, _INPUTS[2], _INPUTS[3]]
        if not torch.allclose(attention(*_INPUTS), _oracle(*_INPUTS), atol=1e-5):
            return False
        return bool(not torch.isfinite(attention(*big)).all() and torch.isfinite(_oracle(*big)).all())
    except Exception:
        return False
