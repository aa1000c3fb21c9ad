# exercise: train-eval/mc-dropout
# bug: eval() switches dropout off, so every sample is the same
# named-by: eval\(\)|training mode|dropout
import torch


def mc_predict(model, x, n):
    model.eval()
    with torch.no_grad():
        samples = [model(x).softmax(dim=1) for _ in range(n)]
    return torch.stack(samples).mean(dim=0)


probs = mc_predict(model, x, 400)
