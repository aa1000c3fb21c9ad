import torch
from torch import nn

# a "pretrained" layer, a batch and a target, and adapter values to probe with
_BASE = {k: v.clone() for k, v in nn.Linear(6, 4).state_dict().items()}
_X, _Y = torch.randn(10, 6), torch.randn(10, 4)
_A, _B = torch.randn(2, 6), torch.randn(4, 2)


def _base():
    base = nn.Linear(6, 4)
    base.load_state_dict(_BASE)
    return base


def init_output(LoRALinear):
    """Your adapted layer's output before any training."""
    return LoRALinear(_base(), 2)(_X).detach()


def _product_at_init(LoRALinear):
    """How far from zero B @ A starts (0.0 when it starts at zero; -1.0 when there is none)."""
    try:
        layer = LoRALinear(_base(), 2)
        return float((layer.B @ layer.A).abs().sum())
    except Exception:
        return -1.0


def _held_base(layer):
    # the base as the layer hands it out (layer.base), registered as a submodule or not
    held = getattr(layer, "base", None)
    return held if isinstance(held, nn.Module) else None


def trainable(LoRALinear):
    """The names of the parameters of your adapted layer that require grad, the base's
    included however the layer holds it."""
    layer = LoRALinear(_base(), 2)
    names = {name for name, p in layer.named_parameters() if p.requires_grad}
    base = _held_base(layer)
    if base is not None:
        names |= {"base." + name for name, p in base.named_parameters() if p.requires_grad}
    return sorted(names)


def output_with(LoRALinear):
    """Your layer's output with A and B set to the probe values."""
    layer = LoRALinear(_base(), 2)
    with torch.no_grad():
        layer.A.copy_(_A)
        layer.B.copy_(_B)
    return layer(_X).detach()


def _train(LoRALinear):
    layer = LoRALinear(_base(), 2)
    # the base's parameters too, however the layer holds it: a frozen base still does not move
    params = {id(p): p for p in [*layer.parameters(), *(_held_base(layer) or nn.Module()).parameters()]}
    opt = torch.optim.SGD([p for p in params.values() if p.requires_grad], lr=0.1)
    losses = []
    for _ in range(20):
        opt.zero_grad()
        loss = ((layer(_X) - _Y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return layer, losses


def base_after_training(LoRALinear):
    """The base layer's weight and bias after 20 SGD steps on your adapted layer."""
    base = _train(LoRALinear)[0].base
    return torch.cat([base.weight.detach().flatten(), base.bias.detach().flatten()])


def loss_falls(LoRALinear):
    """Whether the loss fell over the 20 steps."""
    losses = _train(LoRALinear)[1]
    return losses[-1] < losses[0]


def zero_at_init(LoRALinear):
    """Whether your A and B start all zero, as (A, B)."""
    layer = LoRALinear(_base(), 2)
    return (bool((layer.A == 0).all()), bool((layer.B == 0).all()))


def _unregistered_A(LoRALinear):
    """Whether your A is a plain tensor attribute, not a registered nn.Parameter."""
    try:
        layer = LoRALinear(_base(), 2)
    except Exception:
        return False
    a = getattr(layer, "A", None)
    return isinstance(a, torch.Tensor) and not isinstance(a, nn.Parameter) and "A" not in dict(layer.named_parameters())


def _shapes_transposed(LoRALinear):
    """Whether your A is (in_features, r) and B is (r, out_features): the prompt's shapes transposed."""
    try:
        layer = LoRALinear(_base(), 2)
        return tuple(layer.A.shape) == (6, 2) and tuple(layer.B.shape) == (2, 4)
    except Exception:
        return False
