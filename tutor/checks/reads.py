"""What a run read out of its tensors, kept so that the device run can read it again.

On the meta device a tensor has no data: ``.item()``, ``.tolist()``, ``bool(t)``,
``float(t)`` and ``int(t)`` raise there, and a device run that stops tells nothing. Code
that copies a DEVICE tensor's numbers into a new tensor (``torch.tensor(t.tolist())``,
which lands on the CPU) then passed on a CPU machine although a GPU learner's result is on
the wrong device. So the normal run records, in order, what each such read made by the
setup's or the code's own lines returned, and the device run, which runs the same lines
with the same seed, gets the same answers back. A read that does not match the recorded
one (another call, another shape) means the run went another way: it raises as meta does,
and the device run decides nothing, as before.
"""

from __future__ import annotations

import contextlib
import sys
from collections import deque

import torch

from .namespaces import SETUP, SOLUTION, YOUR_CODE

READS = ("item", "tolist", "__bool__", "__float__", "__int__")
# Reads made by these lines only: torch's own reads (printing a tensor reads its values)
# happen on the CPU in the normal run and not at all on meta.
FILES = frozenset({SETUP, YOUR_CODE, SOLUTION})
MAX_READS = 100_000
MAX_NUMBERS = 1_000_000
NO_DATA = "cannot be read on the meta device: no data (the run went another way than the normal run)"


def _copied(value):
    """A nested list of numbers as ``tolist()`` makes it, copied: the code may change its own."""
    return [_copied(v) for v in value] if isinstance(value, list) else value


class Reads:
    """The reads of one run: recorded while ``recording()``, then handed out by ``take``."""

    def __init__(self) -> None:
        self.entries: deque = deque()
        self.numbers = 0
        self.full = False

    def _add(self, name: str, t: torch.Tensor, value) -> None:
        size = max(1, t.numel())
        if self.full or len(self.entries) >= MAX_READS or self.numbers + size > MAX_NUMBERS:
            self.full = True  # the replay stops here: what follows is not known
            return
        self.numbers += size
        self.entries.append((name, tuple(t.shape), _copied(value)))

    @contextlib.contextmanager
    def recording(self):
        """Record the reads of setup and code lines while inside (torch.Tensor's readers wrapped)."""
        undo = []
        for name in READS:
            own = name in vars(torch.Tensor)
            original = getattr(torch.Tensor, name)
            setattr(torch.Tensor, name, self._recorder(name, original))
            undo.append((name, original, own))
        try:
            yield self
        finally:
            for name, original, own in reversed(undo):
                if own:
                    setattr(torch.Tensor, name, original)
                else:
                    with contextlib.suppress(AttributeError):
                        delattr(torch.Tensor, name)

    def _recorder(self, name: str, original):
        reads = self

        def read(self, *args, **kwargs):
            value = original(self, *args, **kwargs)
            if not args and not kwargs and sys._getframe(1).f_code.co_filename in FILES:
                reads._add(name, self, value)
            return value

        read.__name__ = name
        return read

    def take(self, name: str, t: torch.Tensor):
        """The recorded answer to this read, in order; raises as meta does where it differs."""
        if not self.entries:
            raise RuntimeError(f"Tensor.{name}() {NO_DATA}")
        recorded, shape, value = self.entries.popleft()
        if recorded != name or shape != tuple(t.shape):
            self.entries.clear()
            raise RuntimeError(f"Tensor.{name}() {NO_DATA}")
        return _copied(value)


def replayed(reads: Reads | None, func, args, kwargs, caller) -> tuple[bool, object]:
    """(True, value) when ``func`` is a read by a setup or code line that ``reads`` answers."""
    name = getattr(func, "__name__", "")
    if reads is None or name not in READS or kwargs or len(args) != 1 or not isinstance(args[0], torch.Tensor):
        return False, None
    if caller.f_code.co_filename not in FILES:
        return False, None
    return True, reads.take(name, args[0])
