import torch
from torch.utils.data import Dataset, DataLoader


class WindowDataset(Dataset):
    def __init__(self, series, window):
        self.series = series
        self.window = window

    def __len__(self):
        # the last window needs one more value after it: its target
        return len(self.series) - self.window

    def __getitem__(self, i):
        x = self.series[i : i + self.window]
        y = self.series[i + self.window]
        return x, y


ds = WindowDataset(series, window=4)
loader = DataLoader(ds, batch_size=5)
xb, yb = next(iter(loader))
n_batches = len(loader)
