import torch
import torch.nn.functional as F


def train_step(model, opt, scaler, x, y, max_norm):
    opt.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        loss = F.mse_loss(model(x), y)
    scaler.scale(loss).backward()  # the gradients come out multiplied by the scale
    scaler.unscale_(opt)  # divide them back before anything reads their size
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(opt)  # skipped when a gradient holds inf or nan
    scaler.update()  # halve the scale after an overflow, grow it after a run of good steps
