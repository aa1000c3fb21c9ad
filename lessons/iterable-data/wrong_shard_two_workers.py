# WRONG: hard-codes the prompt's num_workers=2 (step 2) instead of info.num_workers; with 3 or 4 workers records repeat
from torch.utils.data import IterableDataset, get_worker_info


class Shards(IterableDataset):
    def __init__(self, records):
        self.records = records

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(self.records)
        return iter(self.records[info.id :: 2])
