import torch
from torch.utils.data import DataLoader


def make_loader(seed):
    g = torch.Generator().manual_seed(seed)
    return DataLoader(ds, batch_size=4, shuffle=True, generator=g)


loader = make_loader(0)
first = epoch_order(loader)
second = epoch_order(loader)
