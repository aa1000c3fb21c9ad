# WRONG: silences the reentrant "no input requires grad" problem by flipping requires_grad on the CALLER's data tensor (mutates the caller's x, computes a useless input gradient) instead of passing use_reentrant=False
from torch.utils.checkpoint import checkpoint


def forward(blocks, x):
    x.requires_grad_(True)
    for block in blocks:
        x = checkpoint(block, x, use_reentrant=True)
    return x
