"""A second world proves a check only where the check's expected value changes there.

A check of a name the learner's code defines (``expr: shapes``) whose expected value is the
same in every world passes a typed-in answer: copy the value from the prompt and the second
world agrees. This runs every built-in exercise's setup and reference solution in each of
its worlds (real torch, in this process) and lists such checks; the few that are the same
by design are named here with the reason.
"""

from __future__ import annotations

import contextlib
import io
import re

import pytest
import torch

from tutor.checks.namespaces import new_namespace, run_code, seed_all
from tutor.packs.catalog import Catalog

pytestmark = pytest.mark.slow

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

SAME_BY_DESIGN = {
    # The fixed loop reaches 100% on three separated blobs in every world; `losses` (a
    # trajectory that differs per world) is what proves the fix.
    ("debugging-lab/loss-floor", "accuracy"),
    # A mode flag per epoch: True in every world for right code; the setup's Net records
    # the modes of each forward pass, which the other checks read.
    ("debugging-lab/noisy-validation", "dropout_on"),
    ("debugging-lab/stuck-in-eval", "dropout_on"),
    # Facts of two number formats (their largest values, the one that keeps all three roles
    # of values finite): the same in every world; x16 and xbf, the conversions, change.
    ("devices-precision/half-ranges", "f16_max"),
    ("devices-precision/half-ranges", "bf16_max"),
    ("devices-precision/half-ranges", "safe_dtype"),
}


def _value(ns: dict, expr: str):
    value = ns.get(expr)
    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), str(value.dtype), value.detach().cpu().flatten().tolist())
    return repr(value)


def _worlds(exercise) -> list[dict]:
    worlds = []
    for spec in [{"seed": exercise.seed, "variant": ""}, *exercise.worlds()]:
        ns = new_namespace(torch.device("cpu"))
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            seed_all(int(spec["seed"]))
            setup = exercise.setup + ("\n" + spec["variant"] if spec["variant"] else "")
            assert run_code(setup, ns, "<setup>", "setup") is None
            assert run_code(exercise.solution, ns, "<solution>", "solution") is None
        worlds.append(ns)
    return worlds


def test_every_checked_result_changes_in_a_further_world():
    same = []
    for _pack, lesson in Catalog.load().lessons():
        for exercise in lesson.exercises:
            named = [
                c.expr.strip()
                for c in exercise.checks
                if c.kind in ("value", "tensor") and _NAME.match((getattr(c, "expr", "") or "").strip())
            ]
            if not exercise.worlds() or not named:
                continue
            worlds = _worlds(exercise)
            for name in named:
                values = [_value(ns, name) for ns in worlds]
                if all(v == values[0] for v in values[1:]):
                    same.append((f"{lesson.id}/{exercise.id}", name))
    assert sorted(set(same) - SAME_BY_DESIGN) == [], "a typed-in value passes these checks: add a variant"
    assert sorted(SAME_BY_DESIGN - set(same)) == [], "no longer the same in every world: drop it from the list"
