import torch

# The judge's alone (the learner's kernel never runs this): the gradients the checks compare
# with, and what the usual slips make of them, for the feedback.


def true_grads():
    """The same loss's gradients computed in float32 throughout."""
    model, _ = _fresh()
    with torch.autocast(device_type=_X.device.type, enabled=False):
        (1e-7 * ((model(_X) - _Y) ** 2).mean()).backward()
    return _grads(model)


def _times(grads, k):
    """Whether grads (what grads_after returned) are k times the true gradients."""
    try:
        return torch.allclose(grads, true_grads() * k, rtol=0.02)
    except Exception:
        return False
