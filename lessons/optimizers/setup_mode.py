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
    """Whether autograd recorded a forward pass of your run: a grad_fn on the model's output at the moment
    the forward ran (a forward hook sees it), so a graph built and then cut off with .detach() counts."""
    recorded = []
    model = _fresh()
    handle = model.register_forward_hook(lambda module, args, out: recorded.append(out.grad_fn is not None))
    enabled = torch.is_grad_enabled()
    try:
        run(model, _X.clone(), training)
    finally:
        handle.remove()
        torch.set_grad_enabled(enabled)
    return any(recorded)


def _output_has_graph(run, training):
    """Whether the tensor your run returned has a grad_fn."""
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
