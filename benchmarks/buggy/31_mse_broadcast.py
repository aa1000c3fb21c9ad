# exercise: numpy-bridge/broadcast-trap
# bug: (n, 1) - (n,) broadcasts to (n, n)
# named-by: broadcast|squeeze
import torch


def mse(pred, target):
    return ((pred - target) ** 2).mean()
