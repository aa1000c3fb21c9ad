# exercise: debugging-lab/wrong-device
# bug: class weights created on the CPU
# named-by: device
import torch
import torch.nn.functional as F


def weighted_loss(logits, targets):
    weights = torch.tensor([1.0, 1.0, 3.0])
    return F.cross_entropy(logits, targets, weight=weights)
