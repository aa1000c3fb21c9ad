import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

# record ids in stored order; how many is drawn too, so that they rarely split evenly
RECORDS = torch.randperm(100)[: int(torch.randint(9, 16, ()))]


def collected(Shards, workers):
    """What DataLoader(Shards(RECORDS), batch_size=None, num_workers=workers) yields, as ints."""
    loader = DataLoader(Shards(RECORDS), batch_size=None, num_workers=workers)
    return [int(v) for v in loader]


def each_once(Shards, workers):
    """Whether every record came exactly once (in any order)."""
    return sorted(collected(Shards, workers)) == sorted(RECORDS.tolist())


# for the feedback only
def _lost(Shards, workers):
    try:
        got = collected(Shards, workers)
    except Exception:
        return False
    return len(set(got)) == len(got) < len(RECORDS) and set(got) <= set(RECORDS.tolist())


def _error(Shards, workers):
    try:
        collected(Shards, workers)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return ""


def _worker_info_none(Shards):
    # without workers, the code reads a worker attribute (.id, .num_workers) of what get_worker_info() returned: None
    err = _error(Shards, 0)
    return err.startswith("AttributeError: 'NoneType' object has no attribute") and any(
        f"'{a}'" in err for a in ("id", "num_workers")
    )


def _fixed_two(Shards):
    # right for two workers, yet with three worker k yields records[k::2]: a step of 2 written in
    # where info.num_workers belongs
    try:
        positions = list(range(len(RECORDS)))
        return each_once(Shards, 2) and _worker_shares(Shards, RECORDS, 3) == [positions[k::2] for k in range(3)]
    except Exception:
        return False


# another stream, of another length: a dataset must shard the records it was given, not the global RECORDS
_OTHER = torch.arange(100, 100 + len(RECORDS) + 2)


def other_collected(Shards, workers):
    """What a loader over Shards(other records) yields, as ints, sorted."""
    loader = DataLoader(Shards(_OTHER), batch_size=None, num_workers=workers)
    return sorted(int(v) for v in loader)


def _tail_lost(Shards):
    # without workers all come; with workers exactly the last len % num_workers records are missing
    try:
        if collected(Shards, 0) != RECORDS.tolist():
            return False
        n, lost_tail = len(RECORDS), False
        for w in (2, 3):
            got = collected(Shards, w)
            if n % w and sorted(got) == sorted(RECORDS[: n - n % w].tolist()):
                lost_tail = True
        return lost_tail
    except Exception:
        return False


# for the feedback only: which positions of the records each worker yields
def _worker_shares(Shards, records, workers):
    """For each worker, the positions in records of what it yields (None for a value that is
    not among the records), read from a real loader whose items carry their worker's id."""

    class _Tagged(Shards):
        def __iter__(self):
            info = get_worker_info()
            for v in super().__iter__():
                yield (info.id if info is not None else 0, v)

    where = {int(v): i for i, v in enumerate(records.tolist())}
    shares = [[] for _ in range(max(workers, 1))]
    for worker, v in DataLoader(_Tagged(records), batch_size=None, num_workers=workers):
        shares[int(worker)].append(where.get(int(v)))
    return shares


def _shares_said(Shards, records, workers, whose="records"):
    """What differs, in positions: each worker's share, then the positions missing or repeated.
    (No '; ' inside: feedback drops a '; '-part that an earlier check already said.)"""
    try:
        shares = _worker_shares(Shards, records, workers)
    except Exception as exc:
        return f"which positions each worker yields could not be read ({type(exc).__name__}: {exc})"
    n = len(records)
    parts = []
    for k, share in enumerate(shares):
        own = [p for p in share if p is not None]
        foreign = len(share) - len(own)
        values = f"{foreign} value{'s' if foreign > 1 else ''} not among them"
        if own:
            said = f"worker {k} yields the records at positions {own}" + (f" and {values}" if foreign else "")
        else:
            said = f"worker {k} yields {values}" if foreign else f"worker {k} yields nothing"
        parts.append(said)
    counts = [0] * n
    for share in shares:
        for p in share:
            if p is not None:
                counts[p] += 1
    missing = [p for p in range(n) if counts[p] == 0]
    repeated = [p for p in range(n) if counts[p] > 1]
    tail = []
    if missing:
        tail.append(f"positions {missing} never come")
    if repeated:
        tail.append(f"positions {repeated} come more than once")
    return (
        f"with {workers} workers over {n} {whose} (positions 0 to {n - 1}), "
        + ", ".join(parts)
        + (": " + " and ".join(tail) if tail else "")
    )


def _slices_swapped(Shards):
    # for 2 and 3 workers, worker k of n yields exactly records[n::k + 1]: the slice's start and step exchanged
    try:
        n = len(RECORDS)
        for w in (2, 3):
            want = [list(range(n))[w :: k + 1] for k in range(w)]
            if _worker_shares(Shards, RECORDS, w) != want:
                return False
        return True
    except Exception:
        return False


def _yields_global(Shards):
    # a Shards made from other records (ids 100 and up) yields ids of the global RECORDS (all below 100)
    try:
        known = set(RECORDS.tolist())
        return any(
            int(v) in known
            for w in (0, 2)
            for v in DataLoader(Shards(_OTHER), batch_size=None, num_workers=w)
        )
    except Exception:
        return False


def _every_worker_all(Shards, workers):
    # each worker yields every record once: the dataset is not split at all
    try:
        shares = _worker_shares(Shards, RECORDS, workers)
        return all(sorted(s) == list(range(len(RECORDS))) for s in shares)
    except Exception:
        return False


def worker_counts(Shards, workers):
    """How many records each worker of DataLoader(Shards(RECORDS), batch_size=None,
    num_workers=workers) yields, worker 0 first."""
    return [len(share) for share in _worker_shares(Shards, RECORDS, workers)]


# few records over many workers: 5 records over 4 workers, where blocks of ceil(5 / 4) = 2
# leave the last worker nothing
_FEW = torch.arange(200, 205)


def few_worker_counts(Shards, workers=4):
    """How many records each worker of DataLoader(Shards(5 records), batch_size=None,
    num_workers=workers) yields, worker 0 first."""
    return [len(share) for share in _worker_shares(Shards, _FEW, workers)]


def _ceil_blocks(Shards, records=_FEW, workers=4):
    # for the feedback only: worker k yields the contiguous block of ceil(n / workers) records at k
    try:
        n = len(records)
        size = -(-n // workers)
        positions = list(range(n))
        return _worker_shares(Shards, records, workers) == [positions[k * size:(k + 1) * size] for k in range(workers)]
    except Exception:
        return False
