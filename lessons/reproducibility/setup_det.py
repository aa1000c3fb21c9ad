import torch


def _flags():
    return {
        "deterministic algorithms": torch.are_deterministic_algorithms_enabled(),
        "cudnn.benchmark": torch.backends.cudnn.benchmark,
    }


def _set(deterministic, benchmark):
    torch.use_deterministic_algorithms(deterministic)
    torch.backends.cudnn.benchmark = benchmark


def flags_inside(deterministic):
    _set(False, True)
    try:
        with deterministic():
            return _flags()
    finally:
        _set(False, False)


def flags_after(deterministic, start_deterministic, start_benchmark):
    _set(start_deterministic, start_benchmark)
    try:
        with deterministic():
            pass
        return _flags()
    finally:
        _set(False, False)


def flags_after_error(deterministic, start_deterministic=False, start_benchmark=True):
    _set(start_deterministic, start_benchmark)
    try:
        try:
            with deterministic():
                raise ValueError("something went wrong inside the block")
        except ValueError:
            pass
        return _flags()
    finally:
        _set(False, False)


def empty_inside(deterministic):
    _set(False, False)
    try:
        with deterministic():
            return torch.isnan(torch.empty(4)).all().item()
    finally:
        _set(False, False)


def _det_events(deterministic, start_deterministic, start_benchmark):
    """For the feedback only: in order, the calls of torch.use_deterministic_algorithms
    (("set", mode)) and torch.are_deterministic_algorithms_enabled (("read", value)) made
    while the block is entered and left, with ("body",) where the block's body ran."""
    events = []
    real_set, real_read = torch.use_deterministic_algorithms, torch.are_deterministic_algorithms_enabled

    def use(mode, *args, **kwargs):
        events.append(("set", bool(mode)))
        return real_set(mode, *args, **kwargs)

    def read():
        value = real_read()
        events.append(("read", value))
        return value

    _set(start_deterministic, start_benchmark)
    torch.use_deterministic_algorithms, torch.are_deterministic_algorithms_enabled = use, read
    try:
        with deterministic():
            events.append(("body",))
        return events
    finally:
        torch.use_deterministic_algorithms, torch.are_deterministic_algorithms_enabled = real_set, real_read
        _set(False, False)


def _read_after_switching_on(deterministic):
    # starting with the mode off: the block switched it on, only then read it (True), and
    # on the way out set it to True again
    try:
        events = _det_events(deterministic, False, True)
        body = events.index(("body",))
        before, after = events[:body], events[body + 1 :]
        first_on = before.index(("set", True))
        reads = [i for i, e in enumerate(before) if e[0] == "read"]
        sets_after = [e for e in after if e[0] == "set"]
        return (
            bool(reads)
            and all(i > first_on and before[i] == ("read", True) for i in reads)
            and bool(sets_after)
            and sets_after[-1] == ("set", True)
        )
    except Exception:
        return False


def settings_after_warn_only(deterministic):
    """The deterministic settings after the block, for a caller that had them on in
    warn-only mode."""
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cudnn.benchmark = False
    try:
        with deterministic():
            pass
        return {
            "deterministic algorithms": torch.are_deterministic_algorithms_enabled(),
            "warn only": torch.is_deterministic_algorithms_warn_only_enabled(),
        }
    finally:
        _set(False, False)


def warn_only_inside(deterministic):
    """Inside the block: does torch only warn (warn_only=True) about an operation with no
    deterministic implementation, rather than raise?"""
    _set(False, True)
    try:
        with deterministic():
            return torch.is_deterministic_algorithms_warn_only_enabled()
    finally:
        _set(False, False)
