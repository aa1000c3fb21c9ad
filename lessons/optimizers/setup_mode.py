import torch


def _outputs(run, training):
    model = _fresh()
    enabled = torch.is_grad_enabled()
    try:
        out = run(model, _X.clone(), training)
        after = torch.is_grad_enabled()
    finally:
        torch.set_grad_enabled(enabled)  # a run that leaks its grad mode must not change the next probe
    return model, out, after


def output(run, training):
    """Your run's output, detached."""
    return _outputs(run, training)[1].detach()


def records_graph(run, training):
    """Whether your run's output has a grad_fn (autograd recorded the forward)."""
    return _outputs(run, training)[1].grad_fn is not None


def mode_after(run, training):
    """The model's training flag after your run."""
    return _outputs(run, training)[0].training


def grad_enabled_after(run):
    """Whether autograd is still on for the caller after run(model, x, False)."""
    return _outputs(run, False)[2]
