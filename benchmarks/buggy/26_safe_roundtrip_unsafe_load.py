# exercise: checkpoints/safe-roundtrip
# bug: loads without weights_only=True
# named-by: weights_only
import io

import torch


def to_bytes(model):
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    return buffer.getvalue()


def from_bytes(data, model):
    state = torch.load(io.BytesIO(data), weights_only=False)
    model.load_state_dict(state)
    return model
