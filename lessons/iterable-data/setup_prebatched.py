from os import getpid as _getpid

import torch
from torch.utils.data import IterableDataset, get_worker_info

# N rows of features and targets, stored in chunks that are already batches
_N = int(torch.randint(18, 30, ()))
X, Y = torch.randn(_N, 3), torch.randn(_N, 1)
CHUNK = 4


class ChunkStream(IterableDataset):
    """Yields ready-made batches {"x", "y", "rows", "worker", "pid", "pass"}, each chunk from one worker.

    "pid" is the process the batch was made in; "pass" counts how many times this copy of the
    dataset has been iterated in that process (each iteration records the process id it ran in,
    so a count changed in another process, the main one included, does not count)."""

    def __init__(self, x, y, chunk):
        self.x, self.y, self.chunk = x, y, chunk
        self.passes = 0        # iterations of this object in any process (the check does not read it)
        self.iterated_in = []  # the process id of each iteration

    def __iter__(self):
        pid = _getpid()
        self.passes += 1
        self.iterated_in.append(pid)
        passes = self.iterated_in.count(pid)
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
                "pid": pid,
                "pass": passes,
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
    """How many times each worker's copy of the dataset had been iterated in its process, as seen in epoch 2."""
    return sorted({int(b["pass"]) for b in _epochs(make_loader)[1]})


def worker_processes(make_loader):
    """For each worker id, where its batches of the second epoch were made: in the same worker
    process as in the first epoch, a new one, or the main process."""
    main = _getpid()
    first, second = _epochs(make_loader)
    pids = {}
    for epoch, batches in enumerate((first, second)):
        for b in batches:
            pids.setdefault(int(b["worker"]), ([], []))[epoch].append(int(b["pid"]))
    where = []
    for worker, (before, after) in sorted(pids.items()):
        if main in after:
            where.append(f"worker {worker}: the main process")
        elif set(after) <= set(before):
            where.append(f"worker {worker}: the same process as in epoch 1")
        else:
            where.append(f"worker {worker}: a new process")
    return where


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
