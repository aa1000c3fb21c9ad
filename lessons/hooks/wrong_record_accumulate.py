# WRONG: accumulates into the dict like .grad does, so after a second backward the dict holds the sum, not the gradient that backward computed
def record_grads(model):
    grads, handles = {}, []
    for name, p in model.named_parameters():

        def hook(grad, name=name):
            grads[name] = grads.get(name, 0) + grad

        handles.append(p.register_hook(hook))
    return grads, handles
