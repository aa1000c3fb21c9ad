def scale_inputs(model, s):
    def hook(module, args):
        return (args[0] * s,)

    return model.register_forward_pre_hook(hook)


def predict(model, x):
    return model(x)  # __call__ runs the hooks; model.forward(x) would skip them
