"""torch._dynamo imported when something needs it, not on the first meta-device operation.

torch wraps some of its Python functions, the meta device's kernels among them, in
``torch._disable_dynamo``: the wrapper's first call imports torch._dynamo (about a second and
some 800 modules) only to mark the function as one dynamo never traces. Nothing can trace
before torch._dynamo is imported, so until then calling the function itself is exactly what
the wrapper would do. ``defer()`` gives each wrapper that exists that answer ahead of its
first call; once torch._dynamo is imported (torch.compile, an optimizer's step, anyone's
``import torch._dynamo``), each wrapper goes back to torch's own path on its next call.

The fork server defers it while it warms up, so the kernels of a cold check (the first ones
it forks) start a second sooner, then imports torch._dynamo itself before forking the next.
With another torch, whose wrapper is not the one read here, nothing is changed.
"""

from __future__ import annotations

import gc
import sys
import types

_MARK = "__dynamo_disable"  # where torch's wrapper caches its answer, on the function it wraps
_DYNAMO = "torch._dynamo"


class _UntilDynamo:
    """The function itself while torch._dynamo is not imported; torch's wrapper after."""

    __slots__ = ("fn", "wrapper")

    def __init__(self, fn, wrapper) -> None:
        self.fn = fn
        self.wrapper = wrapper

    def __call__(self, *args, **kwargs):
        if _DYNAMO not in sys.modules:
            return self.fn(*args, **kwargs)
        if getattr(self.fn, _MARK, None) is self:
            delattr(self.fn, _MARK)  # torch's wrapper imports dynamo and caches its own answer
        return self.wrapper(*args, **kwargs)


def _wrapper_code():
    try:
        from torch._compile import _disable_dynamo
    except ImportError:
        return None
    code = getattr(_disable_dynamo(lambda: None), "__code__", None)
    if code is None or _MARK not in code.co_consts or "fn" not in code.co_freevars:
        return None  # not the wrapper this module knows
    return code


def defer() -> int:
    """Answer every torch._disable_dynamo wrapper that exists now without torch._dynamo, until
    it is imported; the number of functions answered (0 once it is imported)."""
    if _DYNAMO in sys.modules:
        return 0
    code = _wrapper_code()
    if code is None:
        return 0
    at = code.co_freevars.index("fn")
    answered = 0
    # The functions made from the wrapper's code are what refers to it: the collector finds
    # them in one pass in C (a loop over gc.get_objects() takes ten times as long).
    for obj in gc.get_referrers(code):
        if type(obj) is not types.FunctionType or obj.__code__ is not code or not obj.__closure__:
            continue
        try:
            fn = obj.__closure__[at].cell_contents
        except ValueError:  # an empty cell
            continue
        if getattr(fn, _MARK, None) is None:
            try:
                setattr(fn, _MARK, _UntilDynamo(fn, obj))
            except (AttributeError, TypeError):
                continue
            answered += 1
    return answered


def deferred() -> bool:
    """True while torch._dynamo is not imported in this process."""
    return _DYNAMO not in sys.modules
