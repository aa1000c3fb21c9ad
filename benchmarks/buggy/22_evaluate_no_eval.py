# exercise: train-eval/evaluate
# bug: never calls model.eval()
# named-by: eval\(\)
import torch


def evaluate(model, X, y):
    with torch.no_grad():
        predictions = model(X).argmax(dim=1)
    return (predictions == y).float().mean().item()


accuracy = evaluate(model, X, y)
