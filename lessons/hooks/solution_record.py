def record_grads(model):
    grads, handles = {}, []
    for name, p in model.named_parameters():

        def hook(grad, name=name):  # name=name: bind this loop's name, not the last one
            grads[name] = grad

        handles.append(p.register_hook(hook))
    return grads, handles
