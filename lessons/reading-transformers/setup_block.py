import torch
from torch import nn

# a batch of B sequences of T tokens of width D on DEVICE (B differs from T, so a layout
# that swaps them still runs and gives other numbers)
_B, _T, D, HEADS = 3, int(torch.randint(5, 9, ())), 8, 2
X = torch.randn(_B, _T, D, device=DEVICE)
MASK = torch.ones(_T, _T, dtype=torch.bool, device=DEVICE).triu(diagonal=1)


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
            return x + m if self.residual else m
        a = self.attn(x, x, x, attn_mask=mask, need_weights=False)[0]
        x = self.ln1(x + a)
        return self.ln2(x + self.mlp(x))


def _built(Block):
    with torch.random.fork_rng(devices=[]):  # the same weights every time, the exercise's RNG untouched
        torch.manual_seed(1)
        block = Block(D, HEADS).to(DEVICE).eval()
        # LayerNorms as after training: weights away from 1 and biases away from 0, each its
        # own, so ln1 and ln2 compute different things and using one for the other shows
        with torch.no_grad():
            for name, p in block.named_parameters():
                if name.startswith(("ln1.", "ln2.")):
                    p.add_(0.5 * torch.randn(p.shape).to(p.device))
        return block


def output_of(Block):
    """Your block's output on X with the causal MASK."""
    with torch.no_grad():
        return _built(Block)(X, MASK)


def expected_output(Block, **variant):
    """What a block of the prompt's design gives on X with your block's weights."""
    reference = _Reference(D, HEADS, **variant).to(DEVICE).eval()
    reference.load_state_dict(_built(Block).state_dict())
    with torch.no_grad():
        return reference(X, MASK)


def future_free(Block):
    """Whether changing the last token leaves every earlier position's output unchanged."""
    block = _built(Block)
    changed = X.clone()
    changed[:, -1] = torch.randn(_B, D, device=DEVICE)
    with torch.no_grad():
        return torch.allclose(block(X, MASK)[:, :-1], block(changed, MASK)[:, :-1], atol=1e-6)


def input_unchanged(Block):
    """Whether your block's forward left its input as it was."""
    x = X.clone()
    with torch.no_grad():
        _built(Block)(x, MASK)
    return torch.equal(x, X)


# for the feedback only
def _like(Block, **variant):
    try:
        return torch.allclose(output_of(Block), expected_output(Block, **variant), atol=1e-5)
    except Exception:
        return False


def _error(Block):
    try:
        output_of(Block)
    except Exception as exc:
        return str(exc)
    return ""


def _leaks(Block):
    try:
        return not future_free(Block)
    except Exception:
        return False


def _writes_input(Block):
    """Whether your block's forward wrote into its input x (its values or its version counter changed)."""
    x = X.clone()
    version = x._version
    try:
        with torch.no_grad():
            _built(Block)(x, MASK)
    except Exception:
        pass
    return x._version != version or not torch.equal(x, X)
