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
def _times_each(Shards, workers):
    try:
        got = collected(Shards, workers)
    except Exception:
        return None
    counts = {r: got.count(r) for r in RECORDS.tolist()}
    return counts.popitem()[1] if len(set(counts.values())) == 1 and len(got) == sum(counts.values()) else None


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


def _fixed_two(Shards):
    # right for two workers, yet three repeat records: a step of 2 written in where info.num_workers belongs
    try:
        got = collected(Shards, 3)
        return each_once(Shards, 2) and len(set(got)) < len(got)
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


def _uses_global(Shards):
    # right on RECORDS, yet a dataset made from other records yields RECORDS' ids
    try:
        return collected(Shards, 0) == RECORDS.tolist() and other_collected(Shards, 0) != _OTHER.tolist()
    except Exception:
        return False
