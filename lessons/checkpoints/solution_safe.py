import io

import torch


def to_bytes(model):
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    return buffer.getvalue()


def from_bytes(data, model):
    state = torch.load(io.BytesIO(data), weights_only=True)
    model.load_state_dict(state)
    return model
