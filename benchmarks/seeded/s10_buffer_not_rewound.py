# exercise: checkpoints/safe-roundtrip
# bug: the bytes are written into a new buffer and read without seek(0)
# source: issue 23's list ("a missing seek(0) gets a bare EOFError")
# cues: seek
import io

import torch


def to_bytes(model):
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    return buffer.getvalue()


def from_bytes(data, model):
    buffer = io.BytesIO()
    buffer.write(data)
    state = torch.load(buffer, weights_only=True)
    model.load_state_dict(state)
    return model
