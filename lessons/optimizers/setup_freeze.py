import torch
import torch.nn.functional as F


def _trained(freeze_body, make_optimizer):
    model = _fresh()
    freeze_body(model)
    opt = make_optimizer(model)
    for _ in range(3):
        opt.zero_grad()
        F.mse_loss(model(_X), _YA).backward()
        opt.step()
    return model, opt


def trained_parameters(freeze_body, make_optimizer):
    """Every parameter after three training steps with your freeze_body and make_optimizer."""
    return _flat(_trained(freeze_body, make_optimizer)[0])


def running_mean(freeze_body, make_optimizer):
    """The body's BatchNorm running mean after those steps (it updates only in training mode)."""
    return _trained(freeze_body, make_optimizer)[0].body[1].running_mean.clone()


def optimized(freeze_body, make_optimizer):
    """How many parameter tensors your optimizer holds."""
    return sum(len(group["params"]) for group in _trained(freeze_body, make_optimizer)[1].param_groups)


def given_gradients(freeze_body, make_optimizer):
    """The parameters (names as named_parameters() gives them) that hold a gradient after
    those steps: backward() computed one for them."""
    model = _trained(freeze_body, make_optimizer)[0]
    return [name for name, p in model.named_parameters() if p.grad is not None]


def still_trainable(freeze_body):
    """The parameters (named as named_parameters() gives them) that require grad after freeze_body."""
    model = _fresh()
    freeze_body(model)
    return [name for name, p in model.named_parameters() if p.requires_grad]


def not_training(freeze_body):
    """The modules (named as named_modules() gives them, "" for the model) in eval mode after freeze_body."""
    model = _fresh()
    freeze_body(model)
    return [name for name, m in model.named_modules() if not m.training]


def _holds_frozen(freeze_body, make_optimizer):
    """Whether the optimizer holds a parameter that freeze_body froze."""
    model = _fresh()
    freeze_body(model)
    opt = make_optimizer(model)
    return any(not p.requires_grad for group in opt.param_groups for p in group["params"])


def _evaluated_instead(freeze_body):
    model = _fresh()
    freeze_body(model)
    return not model.body.training and all(p.requires_grad for p in model.body.parameters())


def _frozen_and_evaluated(freeze_body):
    """Whether freeze_body froze some of the body's parameters and also left the body's
    BatchNorm out of training mode (the sentence is about what that BatchNorm then does)."""
    model = _fresh()
    freeze_body(model)
    return not model.body[1].training and any(not p.requires_grad for p in model.body.parameters())


def _misses_trainable(freeze_body, make_optimizer):
    """Whether a parameter that freeze_body left trainable is missing from the optimizer."""
    model = _fresh()
    freeze_body(model)
    opt = make_optimizer(model)
    held = {id(p) for group in opt.param_groups for p in group["params"]}
    body = {id(p) for p in model.body.parameters()}
    # a body left trainable is freeze_body's slip, said by _froze_nothing
    return any(p.requires_grad and id(p) not in held and id(p) not in body for p in model.parameters())


def _froze_nothing(freeze_body):
    """Whether every parameter still requires grad after freeze_body, the body still in
    training mode and no plain attribute set (those two slips have sentences of their own)."""
    model = _fresh()
    freeze_body(model)
    assigned = any("requires_grad" in vars(m) for m in model.modules())
    return model.body.training and not assigned and all(p.requires_grad for p in model.parameters())


def _attribute_instead(freeze_body):
    """Whether freeze_body set a plain requires_grad attribute on a module and froze no parameter of the body."""
    model = _fresh()
    freeze_body(model)
    assigned = any("requires_grad" in vars(m) for m in model.modules())
    return assigned and all(p.requires_grad for p in model.body.parameters())


def _frozen_wrong(freeze_body):
    """(still trainable in the body, frozen outside it): parameter names, as named_parameters() gives them."""
    model = _fresh()
    freeze_body(model)
    body = {id(p) for p in model.body.parameters()}
    named = list(model.named_parameters())
    trainable = [n for n, p in named if id(p) in body and p.requires_grad]
    frozen = [n for n, p in named if id(p) not in body and not p.requires_grad]
    return trainable, frozen


def _freezes_other_than_the_body(freeze_body):
    """Whether freeze_body leaves some of the body trainable or freezes a head, having frozen something."""
    model = _fresh()
    freeze_body(model)
    if all(p.requires_grad for p in model.parameters()):
        return False  # froze nothing: eval() or a plain attribute, said by their own mistakes
    trainable, frozen = _frozen_wrong(freeze_body)
    return bool(trainable or frozen)

