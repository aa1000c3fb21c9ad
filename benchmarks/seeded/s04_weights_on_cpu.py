# exercise: debugging-lab/wrong-device
# bug: the class weights are made on the CPU whatever device the logits are on
# source: "a tensor on CPU cannot combine with GPU weights"
# cues: device
import torch
import torch.nn.functional as F


def weighted_loss(logits, targets):
    weights = torch.tensor([1.0, 1.0, 3.0], dtype=logits.dtype)
    return F.cross_entropy(logits, targets, weight=weights)
