import torch
from torch import nn

# a batch of B sequences of T tokens of width D on DEVICE (B differs from T, so a layout
# that swaps them still runs and gives other numbers)
_B, _T, D, HEADS = 3, int(torch.randint(5, 9, ())), 8, 2
X = torch.randn(_B, _T, D, device=DEVICE)
MASK = torch.ones(_T, _T, dtype=torch.bool, device=DEVICE).triu(diagonal=1)


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


# A padding mask, not a causal one: every query may attend to every key but the last two
# (padding), the future included. A block that builds its own causal mask in place of the
# mask it is given computes other outputs with it.
_PAD_MASK = torch.zeros(_T, _T, dtype=torch.bool, device=DEVICE)
_PAD_MASK[:, -2:] = True


def padded_output_of(Block):
    """Your block's output on X with the padding mask _PAD_MASK."""
    with torch.no_grad():
        return _built(Block)(X, _PAD_MASK)


def weights_of(Block):
    """Your block's weights, as the check builds it (its LayerNorms given weights of their own)."""
    return {name: t.detach().clone() for name, t in _built(Block).state_dict().items()}


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
