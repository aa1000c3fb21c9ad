import torch


def masked_mean(x, lengths):
    T = x.shape[1]
    mask = torch.arange(T, device=x.device) < lengths[:, None]   # (B, T), True on real steps
    mask = mask.to(x.dtype).unsqueeze(-1)                        # (B, T, 1), x's dtype
    return (x * mask).sum(dim=1) / lengths[:, None].to(x.dtype)
