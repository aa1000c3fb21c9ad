# exercise: data-loading/pad-collate
# bug: pad_sequence without batch_first=True returns (T, B)
# named-by: dimensions in another order|batch.first|transpose
import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader


def pad_collate(batch):
    seqs, labels = zip(*batch)
    padded = pad_sequence(list(seqs), padding_value=PAD)
    mask = padded != PAD
    return padded, mask, torch.stack(labels)


loader = DataLoader(examples, batch_size=3, collate_fn=pad_collate)
batches = list(loader)
