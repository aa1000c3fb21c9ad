import math

import torch


def attention(q, k, v, keep):
    # (B, H, T, d) @ (B, H, d, T) -> (B, H, T, T): one score per query (row) and key (column)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(~keep, float("-inf"))  # a blocked key gets no weight
    return scores.softmax(dim=-1) @ v  # each query's weights over the keys sum to 1
