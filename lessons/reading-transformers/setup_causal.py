import torch
from torch import nn

# an encoder layer on DEVICE (no dropout, so outputs are exact) and a batch of B sequences of T tokens
_T = int(torch.randint(4, 9, ()))
_LAYER = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True).to(DEVICE).eval()
_X = torch.randn(3, _T, 8, device=DEVICE)


def encoded_with(causal_mask):
    """The layer's output on the batch, with your mask for its length."""
    with torch.no_grad():
        return _LAYER(_X, src_mask=causal_mask(_T, DEVICE))


def future_free(causal_mask):
    """Whether changing the last token leaves every earlier position's output unchanged."""
    changed = _X.clone()
    changed[:, -1] = torch.randn(3, 8, device=DEVICE)
    with torch.no_grad():
        before = _LAYER(_X, src_mask=causal_mask(_T, DEVICE))
        after = _LAYER(changed, src_mask=causal_mask(_T, DEVICE))
    return torch.allclose(before[:, :-1], after[:, :-1])


def mask_of(causal_mask):
    return causal_mask(_T, DEVICE)


# for the feedback only
def _inverted(causal_mask):
    try:
        mask = causal_mask(_T, DEVICE)
        return mask.dtype == torch.bool and torch.equal(mask.cpu(), torch.ones(_T, _T, dtype=torch.bool).tril())
    except Exception:
        return False


def _blocks_past(causal_mask):
    """A boolean mask with True (blocked) somewhere below the diagonal: a position kept from
    an earlier one."""
    try:
        mask = causal_mask(_T, DEVICE)
        return mask.dtype == torch.bool and mask.shape == (_T, _T) and bool(mask.cpu().tril(diagonal=-1).any())
    except Exception:
        return False


def _nan(causal_mask):
    try:
        return bool(encoded_with(causal_mask).isnan().any())
    except Exception:
        return False


def _blocks_diagonal(causal_mask):
    """Whether the mask blocks every token from itself, so the first position may attend to nothing."""
    try:
        mask = causal_mask(_T, DEVICE).cpu()
        blocked = mask if mask.dtype == torch.bool else mask == float("-inf")
        return bool(blocked.diagonal().all() and blocked[0].all())
    except Exception:
        return False


def attended_with(causal_mask):
    """nn.MultiheadAttention's own output with your mask as attn_mask (its general path, need_weights=True)."""
    with torch.no_grad():
        return _LAYER.self_attn(_X, _X, _X, attn_mask=causal_mask(_T, DEVICE), need_weights=True)[0]


def _float_ones(causal_mask):
    try:
        mask = causal_mask(_T, DEVICE)
        return bool(mask.is_floating_point() and mask.max() == 1 and ((mask == 0) | (mask == 1)).all())
    except Exception:
        return False
