import torch


def split_indices(n, n_val, seed):
    g = torch.Generator().manual_seed(seed)
    perm = torch.randperm(n, generator=g)
    return perm[n_val:], perm[:n_val]


train_idx, val_idx = split_indices(10, 3, seed=0)
