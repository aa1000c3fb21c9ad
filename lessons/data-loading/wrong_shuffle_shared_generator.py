# WRONG: one module-level Generator is re-seeded and shared by every loader; two loaders made with the same seed and iterated side by side (or a loader made after another) disturb each other's order
import torch
from torch.utils.data import DataLoader

_G = torch.Generator()


def make_loader(seed):
    _G.manual_seed(seed)
    return DataLoader(ds, batch_size=4, shuffle=True, generator=_G)


loader = make_loader(0)
first = epoch_order(loader)
second = epoch_order(loader)
