import torch


def _outputs(run, training):
    model = _fresh()
    out = run(model, _X.clone(), training)
    return model, out


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
    _outputs(run, False)
    enabled = torch.is_grad_enabled()
    torch.set_grad_enabled(True)  # leave the kernel as it was for the next check
    return enabled
