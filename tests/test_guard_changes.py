"""The tamper guard's list of what changed (tutor/checks/guard.py Snapshot.changes): it
compares by identity first, so every kind of change must still be named, and a change put
back must no longer be."""

from __future__ import annotations

import builtins

import torch

from tutor.checks.guard import Snapshot


def test_every_kind_of_change_is_named_and_a_change_put_back_is_not():
    snap = Snapshot({})
    assert snap.changes() == []
    equal, tensor_repr, sorted_, call = torch.equal, torch.Tensor.__repr__, builtins.sorted, torch.nn.Module.__call__
    try:
        torch.equal = lambda a, b: True  # a module's function replaced
        torch.Tensor.ptfund_added = 1  # an attribute added to a class
        del torch.Tensor.__repr__  # one removed from it
        torch.nn.Module.__call__ = lambda self, *a, **k: None  # one replaced
        changed = snap.changes()
        builtins.sorted = lambda *a, **k: []  # a builtin: the guard's own sorted is not this
        changed_with_builtin = snap.changes()
    finally:
        builtins.sorted = sorted_
        torch.equal = equal
        del torch.Tensor.ptfund_added
        torch.Tensor.__repr__ = tensor_repr
        torch.nn.Module.__call__ = call
    assert changed == [
        "torch.equal",
        "torch.Tensor.__repr__",
        "torch.Tensor.ptfund_added",
        "torch.nn.Module.__call__",
    ], changed
    assert "builtins.sorted" in changed_with_builtin
    assert snap.changes() == []


def test_a_replacement_that_claims_to_equal_anything_or_blinds_the_comparison_is_named():
    """The guard compares by identity, in C, with functions it took before learner code ran:
    an object whose __eq__ says it equals the original, a replaced operator.is_ or
    operator.itemgetter, and a name deleted from a module are each still named."""
    import operator

    class Equal:
        def __eq__(self, other):
            return True

        __hash__ = object.__hash__

    snap = Snapshot({})
    equal, is_, itemgetter, stack = torch.equal, operator.is_, operator.itemgetter, torch.stack
    try:
        torch.equal = Equal()
        operator.is_ = lambda a, b: True
        operator.itemgetter = lambda *names: lambda obj: tuple(vars(torch).get(n) for n in names)
        del torch.stack
        changed = snap.changes()
    finally:
        torch.equal, operator.is_, operator.itemgetter, torch.stack = equal, is_, itemgetter, stack
    assert "torch.equal" in changed and "torch.stack" in changed, changed
    assert snap.changes() == []
