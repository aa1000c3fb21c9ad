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
import torch

_ALL = torch.tensor(_X_all, dtype=torch.float32, device=DEVICE)


def _fresh_shapes(cls, n_features):
    """The shapes of a fresh cls(n_features): its buffers before and after fit on other rows,
    and its output (only shapes: the values are the other checks' business)."""
    g = torch.Generator().manual_seed(100 + n_features)
    x = (torch.randn(4 * n_features, n_features, generator=g) * 3 + 2).to(DEVICE)
    fresh = cls(n_features).to(DEVICE)
    before = (tuple(fresh.mean.shape), tuple(fresh.std.shape))
    fresh.fit(x)
    return before + (tuple(fresh.mean.shape), tuple(fresh.std.shape), tuple(fresh(x[:3]).shape))


def _fit_returns_self(cls):
    fresh = cls(64).to(DEVICE)
    return fresh.fit(torch.ones(2, 64, device=DEVICE)) is fresh


def _fitted_on_other_rows(cls):
    """mean and std of a fresh cls(64) fitted on the validation rows: other rows of 64
    features, so statistics taken from anything but fit's argument show."""
    fresh = cls(64).to(DEVICE)
    fresh.fit(X_val)
    return torch.cat([fresh.mean.detach().flatten(), fresh.std.detach().flatten()])


def _statistics_not_from_x(cls):
    """Which of a fresh cls(64)'s statistics, fitted on the validation rows, are those a fit
    on the training rows gives (where the two sets of rows give other ones): taken from
    something other than fit's argument ('mean', 'std', both, or '')."""
    on_val, on_train = cls(64).to(DEVICE), cls(64).to(DEVICE)
    on_val.fit(X_val)
    on_train.fit(X_train)
    same = []
    for name in ("mean", "std"):
        a, b = getattr(on_val, name).detach(), getattr(on_train, name).detach()
        if a.shape == b.shape and torch.equal(a, b):
            same.append(name)
    return " and ".join(same)

