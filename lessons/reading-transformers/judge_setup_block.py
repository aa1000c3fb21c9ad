import torch
from torch import nn

# The judge's alone (the learner's kernel never runs this): the block as the prompt
# describes it, what it gives with the learner's weights, and what the usual slips give.


class _Reference(nn.Module):
    """The block as the prompt describes it, to load your block's weights into."""

    def __init__(
        self,
        d_model,
        nhead,
        pre_norm=True,
        residual=True,
        attn_norm="ln1",
        mlp_norm="ln2",
        add_normed=False,
        added_to_normed=False,
        mlp_reads_input=False,
        mlp_added_to_input=False,
    ):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = nn.MultiheadAttention(d_model, nhead, batch_first=True)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))
        self.pre_norm, self.residual = pre_norm, residual
        self.attn_norm, self.mlp_norm = attn_norm, mlp_norm  # which LayerNorm each sublayer reads
        self.add_normed = add_normed  # the slip of adding to the normalised x instead of x
        self.added_to_normed = added_to_normed  # attention's output added to ln1(x), not to x
        self.mlp_reads_input = mlp_reads_input  # the MLP reads ln2 of the block's input, not of x + attn
        self.mlp_added_to_input = mlp_added_to_input  # the MLP's output added to the block's input, not to x + attn

    def forward(self, x, mask):
        if self.add_normed:
            x = self.ln1(x)
            x = x + self.attn(x, x, x, attn_mask=mask, need_weights=False)[0]
            x = self.ln2(x)
            return x + self.mlp(x)
        if self.pre_norm:
            h = getattr(self, self.attn_norm)(x)
            a = self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
            before = x
            x = (h if self.added_to_normed else x) + a if self.residual else a
            m = self.mlp(getattr(self, self.mlp_norm)(before if self.mlp_reads_input else x))
            if not self.residual:
                return m
            return (before if self.mlp_added_to_input else x) + m
        a = self.attn(x, x, x, attn_mask=mask, need_weights=False)[0]
        x = self.ln1(x + a)
        return self.ln2(x + self.mlp(x))


def expected_output(Block, **variant):
    """What a block of the prompt's design gives on X with your block's weights."""
    reference = _Reference(D, HEADS, **variant).to(DEVICE).eval()
    reference.load_state_dict(_built(Block).state_dict())
    with torch.no_grad():
        return reference(X, MASK)


def expected_padded(Block):
    """What a block of the prompt's design gives on X with the padding mask and your block's weights."""
    reference = _Reference(D, HEADS).to(DEVICE).eval()
    reference.load_state_dict(_built(Block).state_dict())
    with torch.no_grad():
        return reference(X, _PAD_MASK)


def _like(output, weights, **variant):
    """Whether your block's output on X (output_of(Block)) is what a block with one of the
    usual slips gives with your block's weights (weights_of(Block))."""
    try:
        reference = _Reference(D, HEADS, **variant).to(DEVICE).eval()
        reference.load_state_dict(weights)
        with torch.no_grad():
            return torch.allclose(output, reference(X, MASK), atol=1e-5)
    except Exception:
        return False
