import torch.nn.functional as F


def accumulate(model, micro_batches):
    total = sum(len(xb) for xb, _ in micro_batches)
    for xb, yb in micro_batches:
        # each micro-batch's mean, weighted by its share of the examples
        loss = F.mse_loss(model(xb), yb) * len(xb) / total
        loss.backward()
