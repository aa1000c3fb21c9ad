# exercise: devices-precision/masked-mean
# bug: the mask is built on the CPU
# named-by: device
import torch


def masked_mean(x, lengths):
    T = x.shape[1]
    mask = torch.arange(T) < lengths[:, None].cpu()
    mask = mask.to(x.dtype).unsqueeze(-1)
    return (x * mask).sum(dim=1) / lengths[:, None].to(x.dtype)
