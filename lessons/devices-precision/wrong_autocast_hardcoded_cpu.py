# WRONG: device_type hard-coded to "cpu" instead of x.device.type; on a GPU autocast would not touch the CUDA ops and the logits would be float32
import torch
import torch.nn.functional as F


def autocast_forward(model, x, y):
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        logits = model(x)
        loss = F.cross_entropy(logits, y)
    return logits, loss


logits, loss = autocast_forward(model, x, y)
loss.backward()
