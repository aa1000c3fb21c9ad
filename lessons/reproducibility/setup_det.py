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


def flags_after_error(deterministic):
    _set(False, True)
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
