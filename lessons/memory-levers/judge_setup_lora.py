import torch

# The judge's alone (the learner's kernel never runs this): the base layer's output and weights before any training, which the checks compare with.


def base_output():
    return _base()(_X).detach()


def base_before():
    return torch.cat([_BASE["weight"].flatten(), _BASE["bias"].flatten()])


def _base_moved(after):
    """Whether the base layer's weights after training (base_after_training) moved."""
    return not torch.equal(after, base_before())
