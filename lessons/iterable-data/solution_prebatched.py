from torch.utils.data import DataLoader


def make_loader(dataset):
    # batch_size=None: the dataset's items are batches already, passed on unchanged;
    # persistent_workers: the two workers (and their dataset copies) outlive each epoch
    return DataLoader(dataset, batch_size=None, num_workers=2, persistent_workers=True)
