# exercise: training-loop/accumulate-and-clip
# bug: clips after the step, so the update uses unclipped gradients
# named-by: clip.*(before|after)|after .*step|before .*step
import torch


def accumulated_update(model, opt, micro_batches, max_norm):
    opt.zero_grad()
    for xb, yb in micro_batches:
        loss = loss_fn(model(xb), yb) / len(micro_batches)
        loss.backward()
    opt.step()
    total_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    return float(total_norm)


norm = accumulated_update(model, opt, micro_batches, max_norm=1.0)
