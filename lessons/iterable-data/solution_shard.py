from torch.utils.data import IterableDataset, get_worker_info


class Shards(IterableDataset):
    def __init__(self, records):
        self.records = records

    def __iter__(self):
        info = get_worker_info()
        if info is None:  # the main process (num_workers=0) yields everything
            start, step = 0, 1
        else:  # worker k of n takes records k, k + n, k + 2n, ...: each exactly once overall
            start, step = info.id, info.num_workers
        for i in range(start, len(self.records), step):
            yield self.records[i]
