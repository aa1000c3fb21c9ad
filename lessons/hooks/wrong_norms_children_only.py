# WRONG: walks only the top-level children, so Linears nested inside sub-modules get no hook
from torch import nn


def grad_output_norms(model):
    norms, handles = [], []

    def hook(module, grad_input, grad_output):
        norms.append(grad_output[0].norm().item())

    for module in model.children():
        if isinstance(module, nn.Linear):
            handles.append(module.register_full_backward_hook(hook))
    return norms, handles
