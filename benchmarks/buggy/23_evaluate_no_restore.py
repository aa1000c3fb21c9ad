# exercise: train-eval/evaluate
# bug: leaves the model in eval mode
# named-by: train\(\)|restore|back
import torch


def evaluate(model, X, y):
    model.eval()
    with torch.no_grad():
        predictions = model(X).argmax(dim=1)
    return (predictions == y).float().mean().item()


accuracy = evaluate(model, X, y)
