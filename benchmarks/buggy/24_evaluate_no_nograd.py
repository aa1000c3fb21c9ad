# exercise: train-eval/evaluate
# bug: builds a graph during evaluation
# named-by: no_grad
import torch


def evaluate(model, X, y):
    was_training = model.training
    model.eval()
    predictions = model(X).argmax(dim=1)
    model.train(was_training)
    return (predictions == y).float().mean().item()


accuracy = evaluate(model, X, y)
