# exercise: training-loop/accumulate-and-clip
# bug: each micro-batch loss is not divided by the number of micro-batches
# named-by: 4 times|sum where a mean|divide|len\(micro_batches\)
import torch


def accumulated_update(model, opt, micro_batches, max_norm):
    opt.zero_grad()
    for xb, yb in micro_batches:
        loss = loss_fn(model(xb), yb)
        loss.backward()
    total_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    opt.step()
    return float(total_norm)


norm = accumulated_update(model, opt, micro_batches, max_norm=1.0)
