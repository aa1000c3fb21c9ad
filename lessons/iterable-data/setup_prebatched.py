import torch
from torch.utils.data import IterableDataset, get_worker_info

# N rows of features and targets, stored in chunks that are already batches
_N = int(torch.randint(18, 30, ()))
X, Y = torch.randn(_N, 3), torch.randn(_N, 1)
CHUNK = 4


class ChunkStream(IterableDataset):
    """Yields ready-made batches {"x", "y", "rows", "worker", "pass"}, each chunk from one worker.

    "pass" counts how many times this copy of the dataset has been iterated."""

    def __init__(self, x, y, chunk):
        self.x, self.y, self.chunk = x, y, chunk
        self.passes = 0

    def __iter__(self):
        self.passes += 1
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        starts = range(0, len(self.x), self.chunk)
        for start in list(starts)[worker::workers]:
            end = start + self.chunk
            yield {
                "x": self.x[start:end],
                "y": self.y[start:end],
                "rows": torch.arange(start, min(end, len(self.x))),
                "worker": worker,
                "pass": self.passes,
            }


def _epochs(make_loader, epochs=2, dataset=None):
    loader = make_loader(ChunkStream(X, Y, CHUNK) if dataset is None else dataset)
    try:
        return [list(loader) for _ in range(epochs)]
    finally:
        # persistent workers outlive the epochs (and an epoch that raised): stop them, and their
        # queue threads, before the check goes on
        iterator = getattr(loader, "_iterator", None)
        if iterator is not None and hasattr(iterator, "_shutdown_workers"):
            iterator._shutdown_workers()


def batch_shapes(make_loader):
    """The shape of each batch's x in the first epoch, in the order they came."""
    return [list(b["x"].shape) for b in _epochs(make_loader, 1)[0]]


def rows_seen(make_loader):
    """The row numbers of every batch in the second epoch, sorted."""
    return sorted(int(r) for b in _epochs(make_loader)[1] for r in b["rows"].flatten())


def rows_of_part(make_loader):
    """The row numbers your loader gives in one epoch over a dataset of X's first 10 rows only."""
    part = ChunkStream(X[:10], Y[:10], CHUNK)
    return sorted(int(r) for b in _epochs(make_loader, 1, part)[0] for r in b["rows"].flatten())


def workers_used(make_loader):
    """The worker ids that produced batches in the first epoch."""
    return sorted({int(b["worker"]) for b in _epochs(make_loader, 1)[0]})


def passes_in_second_epoch(make_loader):
    """How many times each worker's copy of the dataset had been iterated, as seen in epoch 2."""
    return sorted({int(b["pass"]) for b in _epochs(make_loader)[1]})


def _error(make_loader):
    try:
        _epochs(make_loader)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return ""


def _num_workers(make_loader):
    """The num_workers of the loader your make_loader builds (not iterated)."""
    try:
        return make_loader(ChunkStream(X, Y, CHUNK)).num_workers
    except Exception:
        return None


def _batch_size(make_loader):
    try:
        return make_loader(ChunkStream(X, Y, CHUNK)).batch_size
    except Exception:
        return None
