"""Which tensor arguments a call of the learner's function wrote into, by any name.

A function check tells a write into an argument by its values, then by its version counter
(a write undone before returning still moves it). A write through ``x.data``, or through
another tensor made over the same memory, moves no counter of ``x``'s and can be undone
before the call returns: the caller's tensor held other values while the call ran. Every
operation torch dispatches that writes into one of its tensors is seen here, whatever
tensor object names that memory, and compared with the arguments' storages.

A write that torch does not dispatch (through a NumPy array over the same memory) is seen
by its effect: before each operation torch dispatches, the arguments' values are compared
with what they held when the call began (for arguments of up to MAX_WATCHED elements). What
it cannot see: such a write undone before the next operation torch runs.
"""

from __future__ import annotations

import contextlib

import torch
from torch.utils._python_dispatch import TorchDispatchMode

_WRITTEN: dict = {}  # an operation -> the positions and names of the arguments it writes
MAX_WATCHED = 1 << 16  # elements of an argument whose values are compared at each operation


def _written_arguments(func) -> tuple:
    found = _WRITTEN.get(func)
    if found is None:
        try:
            arguments = func._schema.arguments
        except AttributeError:
            arguments = []
        found = _WRITTEN[func] = tuple(
            (i, a.name) for i, a in enumerate(arguments) if a.alias_info is not None and a.alias_info.is_write
        )
    return found


def _storage(t) -> int | None:
    try:
        return t.untyped_storage().data_ptr() if t.device.type != "meta" else None
    except (RuntimeError, NotImplementedError):
        return None  # a tensor with no storage of its own (a functional wrapper)


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal values, NaN where NaN was."""
    if a.is_floating_point() or a.is_complex():
        return bool(torch.equal(a.isnan(), b.isnan()) and torch.equal(torch.nan_to_num(a), torch.nan_to_num(b)))
    return bool(torch.equal(a, b))


class _Watch(TorchDispatchMode):
    def __init__(self, storages: dict, kept: dict):
        super().__init__()
        self.storages = storages  # storage address -> the argument positions over it
        self.kept = kept  # argument position -> (the argument, its values when the call began)
        self.written: set = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        for j, (arg, values) in list(self.kept.items()):
            if not _same(arg, values):  # written by something torch did not dispatch (NumPy)
                self.written.add(j)
                del self.kept[j]
        for i, name in _written_arguments(func):
            target = args[i] if i < len(args) else kwargs.get(name)
            if isinstance(target, torch.Tensor):
                where = _storage(target)
                if where in self.storages:
                    self.written.update(self.storages[where])
        return func(*args, **kwargs)


@contextlib.contextmanager
def watched(args):
    """Watch the call inside the block; yields the set that ends up holding the positions of
    the tensor arguments whose memory an operation wrote into."""
    storages: dict = {}
    kept: dict = {}
    for j, a in enumerate(args):
        if type(a) in (torch.Tensor, torch.nn.Parameter):
            where = _storage(a)
            if where:  # an empty tensor's memory is at 0: nothing to write into
                storages.setdefault(where, []).append(j)
                if a.numel() <= MAX_WATCHED:
                    kept[j] = (a, a.detach().clone())
    if not storages:
        yield set()
        return
    watch = _Watch(storages, kept)
    with watch:
        yield watch.written
