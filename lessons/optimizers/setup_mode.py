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


def records_graph(run, training, caller=True):
    """Whether autograd recorded a forward pass of your run: a grad_fn on the model's output at the moment
    the forward ran (a forward hook sees it), so a graph built and then cut off with .detach() counts.
    caller: the grad mode the caller has when it calls run (False: a caller inside torch.no_grad())."""
    recorded = []
    model = _fresh()
    # on every module, not the model alone: model.forward(x) skips the model's own hooks but
    # still calls its layers
    handles = [
        m.register_forward_hook(lambda module, args, out: recorded.append(getattr(out, "grad_fn", None) is not None))
        for m in model.modules()
    ]
    enabled = torch.is_grad_enabled()
    try:
        torch.set_grad_enabled(caller)
        out = run(model, _X.clone(), training)
    finally:
        for handle in handles:
            handle.remove()
        torch.set_grad_enabled(enabled)
    return any(recorded) or getattr(out, "grad_fn", None) is not None


def records_graph_in_no_grad(run):
    """Whether run(model, x, True), called inside a caller's torch.no_grad(), records a graph."""
    return records_graph(run, True, caller=False)


def _output_has_graph(run, training):
    """Whether the tensor your run returned has a grad_fn."""
    return _outputs(run, training)[1].grad_fn is not None


def mode_after(run, training):
    """The model's training flag after your run."""
    return _outputs(run, training)[0].training


def _batchnorm_trains_after(run, training):
    """For the mistakes: whether a BatchNorm layer of the model is in training mode after your run."""
    model = _outputs(run, training)[0]
    return any(m.training for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm))


def mode_after_eval(run):
    """The model's training flag after run(model, x, True) on a model an earlier call left in eval mode."""
    model = _fresh()
    model.eval()
    enabled = torch.is_grad_enabled()
    try:
        run(model, _X.clone(), True)
    finally:
        torch.set_grad_enabled(enabled)
    return model.training


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
    # every caller, with autograd on or off, training True or False, comes back with autograd on
    try:
        return caller_modes_after(run) == [True, True, True, True]
    except Exception:
        return False


def _mode_leaks(run):
    # every caller comes back with the grad mode training asked for, not its own
    try:
        return caller_modes_after(run) == [True, False, True, False]
    except Exception:
        return False


def _graph_only_when_caller_records(run):
    # training=True records a graph for a caller with autograd on, none for a caller inside no_grad()
    try:
        return records_graph(run, True) and not records_graph_in_no_grad(run)
    except Exception:
        return False
