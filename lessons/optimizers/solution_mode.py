import torch


def run(model, x, training):
    model.train(training)  # the layers' behaviour: BatchNorm's batch vs running statistics
    with torch.set_grad_enabled(training):  # autograd recording, and nothing else
        return model(x)
