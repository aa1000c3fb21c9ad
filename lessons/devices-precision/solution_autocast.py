import torch
import torch.nn.functional as F


def autocast_forward(model, x, y):
    with torch.autocast(device_type=x.device.type, dtype=torch.bfloat16):
        logits = model(x)
        loss = F.cross_entropy(logits, y)
    return logits, loss


logits, loss = autocast_forward(model, x, y)
loss.backward()
