import torch


def freeze_body(model):
    model.body.requires_grad_(False)  # no gradients, no updates; BatchNorm stays in training mode


def make_optimizer(model):
    trainable = [p for p in model.parameters() if p.requires_grad]
    return torch.optim.SGD(trainable, lr=0.1, momentum=0.9)
