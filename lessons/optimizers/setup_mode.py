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


def caller_modes_after(run):
    """The caller's grad mode after run, for callers with autograd on and off (in no_grad), training True then False."""
    seen = []
    for caller in (True, False):
        for training in (True, False):
            enabled = torch.is_grad_enabled()
            try:
                torch.set_grad_enabled(caller)
                run(_fresh(), _X.clone(), training)
                seen.append(torch.is_grad_enabled())
            finally:
                torch.set_grad_enabled(enabled)
    return seen


def _forces_on(run):
    # gives autograd back on to a caller that had it off
    try:
        return caller_modes_after(run)[2:] != [False, False] and grad_enabled_after(run)
    except Exception:
        return False
