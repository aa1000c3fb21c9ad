"""Which values a judge received from the learner's kernel (a function's result, a module's
output): a check's own expression may then be read as "the learner's value against the
value it is compared with". Values made in the judge (the reference's, a twin model's, the
inputs it chose) are never marked; a value derived from a received one is a new object and
unmarked too, so a mark is only ever what the learner's code itself returned.

Kept by identity (a tensor's ``==`` is elementwise), and only while the value lives.
"""

import weakref

_received: dict = {}  # id(value) -> weak reference to it
_DEPTH = 2  # a tuple or dict of outputs, and their items; no deeper


def mark(value, depth: int = 0) -> None:
    """Mark ``value`` (and the items of a tuple, list or dict it is) as the learner's."""
    if isinstance(value, (tuple, list)) and depth < _DEPTH:
        for item in value:
            mark(item, depth + 1)
        return
    if isinstance(value, dict) and depth < _DEPTH:
        for item in value.values():
            mark(item, depth + 1)
        return
    key = id(value)

    def forget(_ref) -> None:
        _received.pop(key, None)

    try:
        _received[key] = weakref.ref(value, forget)
    except TypeError:  # numbers, strings: nothing to tell apart by identity
        pass


def received(value) -> bool:
    """True if this very object came from the learner's kernel."""
    ref = _received.get(id(value))
    return ref is not None and ref() is value
