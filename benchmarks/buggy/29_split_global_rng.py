# exercise: reproducibility/private-split
# bug: reseeds the global generator instead of using a private one
# named-by: Generator|global
import torch


def split_indices(n, n_val, seed):
    torch.manual_seed(seed)
    perm = torch.randperm(n)
    return perm[n_val:], perm[:n_val]


train_idx, val_idx = split_indices(10, 3, seed=0)
