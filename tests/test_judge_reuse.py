"""A judge's kernel kept from one attempt to the next (grade, pack test) decides each as a
fresh one would, and is shut down with the batch. Real kernels, real torch."""

from __future__ import annotations

import asyncio

import pytest
from test_judge_tampering import FUNCTION, PROBES

from tutor.engine import KernelPool
from tutor.grading import judging
from tutor.grading.verify import KERNELS_PER_VERIFICATION, Verifier
from tutor.packs import models as m
from tutor.packs.catalog import Catalog

pytestmark = pytest.mark.slow


def test_a_kept_judge_decides_each_attempt_afresh():
    exercise = Catalog.load().find_exercise(FUNCTION).exercise
    attempts = [
        exercise.solution,
        PROBES["gc-unfreeze"][1],  # reaches for the checker's objects in its own kernel
        exercise.wrong_solutions[0].code,
        exercise.solution,
    ]
    judges: list = []

    async def run() -> list[str]:
        pool = KernelPool(size=KERNELS_PER_VERIFICATION, recover=False)
        verifier = Verifier(pool, reuse_judges=True)
        statuses = []

        async def worker() -> None:
            for code in attempts:
                statuses.append((await verifier.verify(exercise, code)).status)
                judges.extend(judge for _, judge, _ in verifier._idle_judges if judge not in judges)

        await verifier.fan_out(1, worker)
        assert not verifier._idle_judges
        return statuses

    assert asyncio.run(run()) == ["pass", "fail", "fail", "pass"]
    assert len(judges) == 1  # one judge served all four attempts
    assert judges[0].state == "stopped"  # and was shut down with the batch


# A setup that leaves something behind in the process that runs it (a pack's own doing).
PATCHING = m.Exercise(
    id="patching",
    title="patching",
    prompt="Bind y to 2.",
    setup="import torch\ntorch.Tensor.ptfund_left_behind = lambda self: 0\n",
    solution="y = 2\n",
    checks=[{"kind": "python", "code": "assert y == 2, 'y is not 2'"}],
)


def _graded(attempts: list, monkeypatch) -> tuple[list[str], list[tuple[str, int]]]:
    """Each attempt's status through one worker with kept judges, and which judge (by
    kernel) decided which exercise."""
    served: list[tuple[str, int]] = []
    verify_judged = judging.verify_judged

    async def recording(exercise, code, learner, judge, **options):
        served.append((exercise.id, id(judge)))
        return await verify_judged(exercise, code, learner, judge, **options)

    monkeypatch.setattr(judging, "verify_judged", recording)

    async def run() -> list[str]:
        pool = KernelPool(size=KERNELS_PER_VERIFICATION, recover=False)
        verifier = Verifier(pool, reuse_judges=True)
        statuses = []

        async def worker() -> None:
            for exercise, code in attempts:
                statuses.append((await verifier.verify(exercise, code)).status)

        await verifier.fan_out(1, worker)
        return statuses

    return asyncio.run(run()), served


def test_a_clean_judge_serves_the_next_exercise(monkeypatch):
    catalog = Catalog.load()
    function = catalog.find_exercise(FUNCTION).exercise
    views = catalog.find_exercise("views-strides/transpose-view").exercise
    attempts = [
        (function, function.solution),
        (views, views.solution),
        (function, function.wrong_solutions[0].code),
        (views, views.starter),
        (function, PROBES["gc-unfreeze"][1]),
        (views, views.solution),
    ]
    statuses, served = _graded(attempts, monkeypatch)
    assert statuses == ["pass", "pass", "fail", "fail", "fail", "pass"]
    assert len({judge for _, judge in served}) == 1  # one judge decided both exercises, each afresh


def test_a_judge_a_setup_changed_judges_only_that_exercise(monkeypatch):
    views = Catalog.load().find_exercise("views-strides/transpose-view").exercise
    attempts = [(PATCHING, "y = 2\n"), (views, views.solution), (PATCHING, "y = 3\n"), (views, views.solution)]
    statuses, served = _graded(attempts, monkeypatch)
    assert statuses == ["pass", "pass", "fail", "pass"]
    patched = {judge for exercise, judge in served if exercise == "patching"}
    # Kept for the next attempt at its own exercise, never handed to another one.
    assert len(patched) == 1
    assert not patched & {judge for exercise, judge in served if exercise != "patching"}
