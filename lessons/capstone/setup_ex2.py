import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split


def _splits():
    X_all, y_all = load_digits(return_X_y=True)   # bundled with scikit-learn: no download
    rows = np.arange(len(y_all))
    dev_rows, test_rows = train_test_split(rows, test_size=0.2, stratify=y_all, random_state=1)
    train_rows, val_rows = train_test_split(dev_rows, test_size=0.25, stratify=y_all[dev_rows], random_state=2)
    return X_all, y_all, train_rows, val_rows, test_rows


def _tensors(X_all, y_all, rows):
    X = torch.tensor(X_all[rows], dtype=torch.float32, device=DEVICE)
    y = torch.tensor(y_all[rows], dtype=torch.long, device=DEVICE)
    return X, y


_X_all, _y_all, _train_rows, _val_rows, _test_rows = _splits()
X_train, y_train = _tensors(_X_all, _y_all, _train_rows)
X_val, y_val = _tensors(_X_all, _y_all, _val_rows)
import copy

from torch import nn


class Standardize(nn.Module):
    """The normaliser of the previous exercise: buffers mean and std, fitted with fit(x)."""

    def __init__(self, n_features):
        super().__init__()
        self.register_buffer("mean", torch.zeros(n_features))
        self.register_buffer("std", torch.ones(n_features))

    def fit(self, x):
        with torch.no_grad():
            self.mean.copy_(x.mean(dim=0))
            self.std.copy_(x.std(dim=0, unbiased=False).clamp_min(1.0))
        return self

    def forward(self, x):
        return (x - self.mean) / self.std


def _accuracy(model, X, y):
    was_training = model.training
    model.eval()
    with torch.no_grad():
        acc = (model(X).argmax(dim=1) == y).float().mean().item()
    model.train(was_training)
    return acc


def val_accuracy(model):
    return _accuracy(model, X_val, y_val)


def test_accuracy(model):
    """Accuracy on the held-out test rows, which the exercise never hands out."""
    X_all, y_all, _, _, test_rows = _splits()
    X_test, y_test = _tensors(X_all, y_all, test_rows)
    return _accuracy(model, X_test, y_test)


def shares_memory_with_model(state, model):
    if not isinstance(state, dict):
        return False
    live = model.state_dict()
    return any(isinstance(v, torch.Tensor) and k in live and v.data_ptr() == live[k].data_ptr()
               for k, v in state.items())


_ALL = torch.tensor(_X_all, dtype=torch.float32, device=DEVICE)
_DEV = torch.cat([X_train, X_val])
