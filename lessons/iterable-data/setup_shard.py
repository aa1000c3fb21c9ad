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
