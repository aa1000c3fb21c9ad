import torch
from torch import nn


# What each block's forward did, kept here rather than on the block, where code under test
# could write it: id(block) -> how many times its forward ran, and the list run_order
# records positions into (with each block's position).
_RUNS: dict = {}
_ORDER: list = [None, {}]


class Block(nn.Module):
    """Linear then tanh; the setup counts how often its forward runs."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 6)

    def forward(self, x):
        _RUNS[id(self)] = _RUNS.get(id(self), 0) + 1
        if _ORDER[0] is not None and id(self) in _ORDER[1]:
            _ORDER[0].append(_ORDER[1][id(self)])
        return torch.tanh(self.lin(x))


def _make():
    return nn.Sequential(Block(), Block(), Block())


_STATE = {k: v.clone() for k, v in _make().state_dict().items()}
_X, _Y = torch.randn(8, 6), torch.randn(8, 6)


def _fresh():
    blocks = _make()
    blocks.load_state_dict(_STATE)
    for block in blocks:  # a new block may take the id of one gone
        _RUNS[id(block)] = 0
    _ORDER[0], _ORDER[1] = None, {}
    return blocks


def _grads(blocks, out):
    ((out - _Y) ** 2).mean().backward()
    # a parameter no gradient reached counts as zeros (_blocks_without_grad says which)
    return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).flatten() for p in blocks.parameters()])


def _blocks_without_grad(forward):
    # the positions of the blocks that ran in the forward and whose parameters backward left
    # no gradient: their output never reached the result (a block that never ran is another bug)
    blocks = _fresh()
    out = forward(blocks, _X.clone())
    if not (isinstance(out, torch.Tensor) and out.requires_grad):
        return []
    ran = [_RUNS.get(id(block), 0) > 0 for block in blocks]
    ((out - _Y) ** 2).mean().backward()
    return [i for i, block in enumerate(blocks) if ran[i] and all(p.grad is None for p in block.parameters())]


def grads_with(forward):
    """Every parameter's gradient after backward through your forward."""
    blocks = _fresh()
    return _grads(blocks, forward(blocks, _X.clone()))


def forward_runs(forward):
    """How many times each block's forward ran, through one forward and one backward."""
    blocks = _fresh()
    out = forward(blocks, _X.clone())
    if out.requires_grad:
        ((out - _Y) ** 2).mean().backward()
    return [_RUNS.get(id(block), 0) for block in blocks]


def caller_input_after(forward):
    """The caller's x after your forward and a backward: (requires_grad, whether it got a .grad)."""
    blocks, x = _fresh(), _X.clone()
    out = forward(blocks, x)
    if out.requires_grad:
        ((out - _Y) ** 2).mean().backward()
    return (x.requires_grad, x.grad is not None)


def kept_for_backward(forward):
    """How many tensors autograd saved for backward while your forward ran (what a plain
    forward keeps: each layer's input, weight and output)."""
    blocks, kept = _fresh(), [0]

    def pack(tensor):
        kept[0] += 1
        return tensor

    # Checkpointed blocks save through checkpoint's own hooks, inside these: what reaches
    # this pack is what stays in memory between forward and backward.
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        out = forward(blocks, _X.clone())
    if out.requires_grad:
        ((out - _Y) ** 2).mean().backward()
    return kept[0]


def _has_graph(forward, x):
    return forward(_fresh(), x).grad_fn is not None


def _reentrant(forward):
    # the reentrant variant records nothing when no input requires grad, and works when one does
    return not _has_graph(forward, _X.clone()) and _has_graph(forward, _X.clone().requires_grad_())


def _no_graph_at_all(forward):
    return not _has_graph(forward, _X.clone()) and not _has_graph(forward, _X.clone().requires_grad_())


def run_order(forward):
    """The order in which the blocks' forwards ran (0, 1, 2 by position), through one forward and one backward."""
    # recorded inside Block.forward, so a checkpoint of block.forward (which skips hooks) counts too
    blocks, order = _fresh(), []
    _ORDER[0], _ORDER[1] = order, {id(block): i for i, block in enumerate(blocks)}
    out = forward(blocks, _X.clone())
    if out.requires_grad:
        ((out - _Y) ** 2).mean().backward()
    return order
