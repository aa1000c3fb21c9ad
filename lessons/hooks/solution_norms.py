from torch import nn


def grad_output_norms(model):
    norms, handles = [], []

    def hook(module, grad_input, grad_output):
        norms.append(grad_output[0].norm().item())

    for module in model.modules():
        if isinstance(module, nn.Linear):
            handles.append(module.register_full_backward_hook(hook))
    return norms, handles
