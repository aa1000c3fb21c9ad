# exercise: data-loading/seeded-shuffle
# bug: DataLoader shuffles from the global generator (no generator=)
# named-by: generator|Generator
import torch
from torch.utils.data import DataLoader


def make_loader(seed):
    torch.manual_seed(seed)
    return DataLoader(ds, batch_size=4, shuffle=True)


loader = make_loader(0)
first = epoch_order(loader)
second = epoch_order(loader)
