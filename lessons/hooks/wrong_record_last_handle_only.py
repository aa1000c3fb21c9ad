# WRONG: the append sits after the loop, so only the last parameter's handle is returned and removing it leaves the other hooks on
def record_grads(model):
    grads, handles = {}, []
    for name, p in model.named_parameters():
        def hook(grad, name=name):
            grads[name] = grad
        h = p.register_hook(hook)
    handles.append(h)
    return grads, handles
