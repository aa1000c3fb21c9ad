# exercise: debugging-lab/wrong-device
# bug: the class weights follow the logits' device but not their dtype (float64 logits fail)
# source: "Treat shape, dtype, and device as part of every function's contract"
# cues: dtype|float64|Double
import torch
import torch.nn.functional as F


def weighted_loss(logits, targets):
    weights = torch.tensor([1.0, 1.0, 3.0]).to(logits.device)
    return F.cross_entropy(logits, targets, weight=weights)
