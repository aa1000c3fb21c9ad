# WRONG: the pre-hook scales args[0] in place (mul_), hiding it by cloning inside predict; model(x) called directly still mutates the caller's x
def scale_inputs(model, s):
    def hook(module, args):
        args[0].mul_(s)

    return model.register_forward_pre_hook(hook)


def predict(model, x):
    return model(x.clone())
