# exercise: data-loading/window-dataset
# bug: __len__ counts one window too many
# named-by: len
import torch
from torch.utils.data import Dataset, DataLoader


class WindowDataset(Dataset):
    def __init__(self, series, window):
        self.series = series
        self.window = window

    def __len__(self):
        return len(self.series) - self.window + 1

    def __getitem__(self, i):
        return self.series[i : i + self.window], self.series[i + self.window]


ds = WindowDataset(series, window=4)
loader = DataLoader(ds, batch_size=5)
xb, yb = next(iter(loader))
n_batches = len(loader)
