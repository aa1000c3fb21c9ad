# WRONG: optimizer built over head a only (the loss uses a), dropping head b, which the prompt says is still trainable
import torch


def freeze_body(model):
    model.body.requires_grad_(False)


def make_optimizer(model):
    return torch.optim.SGD(model.a.parameters(), lr=0.1, momentum=0.9)
