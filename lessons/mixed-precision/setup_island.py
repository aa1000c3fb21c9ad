import torch
from torch import nn

# an encoder on DEVICE (float32 weights) and a batch of inputs; sizes drawn too
_D = int(torch.randint(6, 12, ()))
encoder = nn.Sequential(nn.Linear(_D, 32), nn.Tanh(), nn.Linear(32, 16)).to(DEVICE)
x = torch.randn(int(torch.randint(8, 16, ())), _D, device=DEVICE)


def _autocast_on_meta(embed_and_compare):
    """For the checks: is autocast asked for the meta device when the data is on meta?"""
    meta_encoder = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 16)).to("meta")
    return _autocast_asked_for_meta(lambda: embed_and_compare(meta_encoder, torch.empty(5, 8, device="meta")))


def other_emb(embed_and_compare):
    """emb from embed_and_compare given another encoder and another batch (on DEVICE)."""
    with torch.random.fork_rng(devices=[]):  # the same weights in every namespace, the exercise's RNG untouched
        torch.manual_seed(7)
        other = nn.Sequential(nn.Linear(5, 32), nn.Tanh(), nn.Linear(32, 16))
        batch = torch.randn(6, 5)
    return embed_and_compare(other.to(DEVICE), batch.to(DEVICE))[0]


def _linear_weights_used(fn):
    """For the checks: for each nn.Linear layer of a copy of encoder given to fn, whether its
    weight was used under autocast, and for which dtype (the lessons' shared prelude)."""
    return _weights_under_autocast(encoder, lambda m: fn(m, x))
