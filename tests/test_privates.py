"""The setup's private state, named by the learner's code, fails the attempt (privates.py);
an exercise's own names, a class's own fields and the learner's own private names do not."""

from __future__ import annotations

from pathlib import Path

import pytest

from tutor.checks import privates
from tutor.packs.catalog import Catalog

PRELUDE = Path(__file__).resolve().parent.parent / "lessons" / "autograd" / "prelude_autograd.py"


def test_the_autograd_preludes_state_is_private():
    names, attributes = privates.of_setup(PRELUDE.read_text())
    assert {"_BACKWARD_ROOTS", "_BACKWARD_FILLED"} <= names and {"_roots", "_filled"} <= attributes
    assert "_" not in names and "__doc__" not in attributes


@pytest.mark.parametrize(
    ("code", "found"),
    [
        ("_BACKWARD_ROOTS.append(c.grad_fn)\n", ("_BACKWARD_ROOTS", 1)),
        ("x = 1\ntorch.autograd.backward._filled.clear()\n", ("_filled", 2)),
        ("getattr(torch.autograd.backward, '_ro' + 'ots').clear()\n", ("_roots", 1)),
        ("globals()[f'_BACKWARD_{\"FILLED\"}'].clear()\n", ("_BACKWARD_FILLED", 1)),
        ("c.backward()\n", None),
        ("_backward_ran(c)\n", None),  # calling a helper changes nothing it reads
    ],
)
def test_code_that_names_the_setups_state_is_found(code, found):
    assert privates.reached(code, privates.of_setup(PRELUDE.read_text())) == found


def test_a_classs_own_fields_and_the_learners_own_names_are_not_the_setups():
    setup = "class Box:\n    def __init__(self):\n        self._items = []\n_start = 1\n"
    learner = "class Value:\n    def __init__(self):\n        self._items = []\n        self._prev = set()\n"
    engine = "def _backward():\n    pass\nout._backward = _backward\n"
    # The learner's engine sets ._backward on its own nodes, as the setup's engine does.
    assert (
        privates.reached("def _backward():\n    pass\nout._backward = _backward\n", privates.of_setup(engine)) is None
    )
    assert privates.of_setup(setup) == ({"_start"}, set())
    assert privates.reached(learner, privates.of_setup(setup)) is None


def test_no_reference_or_accepted_solution_of_the_built_in_pack_names_its_setups_state():
    for _, lesson in Catalog.load().lessons():
        for exercise in lesson.exercises:
            setups = [exercise.setup, *exercise.variants]
            for code in [exercise.solution, *exercise.accepted_solutions]:
                assert privates.reached(code, privates.of_setup(*setups)) is None, exercise.id


def test_a_helpers_local_names_are_not_the_setups_state():
    setup = "def _helper(x):\n    _tmp = x * 2\n    return _tmp\n_kept = 1\ndef _count():\n    global _calls\n    _calls = 1\n"
    names, _ = privates.of_setup(setup)
    assert names == {"_kept", "_calls"}
    assert privates.reached("_tmp = 3\nprint(_tmp)\n", privates.of_setup(setup)) is None
