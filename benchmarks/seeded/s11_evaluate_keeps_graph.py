# exercise: train-eval/evaluate
# bug: evaluation builds an autograd graph (no torch.no_grad())
# source: "Is a graph being built where none is needed?" / "Forgetting no_grad() is ... a memory one"
# cues: no_grad|inference_mode|graph|requires_grad
import torch


def evaluate(model, X, y):
    was_training = model.training
    model.eval()
    predictions = model(X).argmax(dim=1)
    model.train(was_training)
    return (predictions == y).float().mean().item()


accuracy = evaluate(model, X, y)
