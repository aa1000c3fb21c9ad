# exercise: checkpoints/safe-roundtrip
# bug: the checkpoint holds the model object (pickled), not its state_dict
# source: "a saved state_dict is not the same thing as arbitrary Python state"
# cues: state_dict|pickl|weights_only
import io

import torch


def to_bytes(model):
    buffer = io.BytesIO()
    torch.save({"model": model}, buffer)
    return buffer.getvalue()


def from_bytes(data, model):
    state = torch.load(io.BytesIO(data), weights_only=True)
    model.load_state_dict(state["model"].state_dict())
    return model
