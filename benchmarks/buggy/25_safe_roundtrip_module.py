# exercise: checkpoints/safe-roundtrip
# bug: pickles the whole module and loads with weights_only=False
# named-by: state_dict|weights_only
import io

import torch


def to_bytes(model):
    buffer = io.BytesIO()
    torch.save(model, buffer)
    return buffer.getvalue()


def from_bytes(data, model):
    return torch.load(io.BytesIO(data), weights_only=False)
