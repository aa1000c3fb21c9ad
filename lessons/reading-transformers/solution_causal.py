import torch


def causal_mask(T, device):
    # nn.MultiheadAttention's boolean attn_mask: True where attention is NOT allowed,
    # here every key after the query (above the diagonal)
    return torch.ones(T, T, dtype=torch.bool, device=device).triu(diagonal=1)
