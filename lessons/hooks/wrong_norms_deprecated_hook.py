# WRONG (vs the prompt): uses the deprecated non-full register_backward_hook, which reports the gradient of the module's LAST autograd op, not the module's true grad_output (right for a bare Linear only by luck)
from torch import nn


def grad_output_norms(model):
    norms, handles = [], []

    def hook(module, grad_input, grad_output):
        norms.append(grad_output[0].norm().item())

    for module in model.modules():
        if isinstance(module, nn.Linear):
            handles.append(module.register_backward_hook(hook))
    return norms, handles
