# WRONG: reads p.grad inside the tensor hook; the hook runs before the gradient reaches p.grad, so it stores None
def record_grads(model):
    grads, handles = {}, []
    for name, p in model.named_parameters():
        def hook(grad, name=name, p=p):
            grads[name] = p.grad
        handles.append(p.register_hook(hook))
    return grads, handles
