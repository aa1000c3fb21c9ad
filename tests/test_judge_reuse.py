"""A judge's kernel kept from one attempt to the next (grade, pack test) decides each as a
fresh one would, and is shut down with the batch. Real kernels, real torch."""

from __future__ import annotations

import asyncio

import pytest
from test_judge_tampering import FUNCTION, PROBES

from tutor.engine import KernelPool
from tutor.grading.verify import KERNELS_PER_VERIFICATION, Verifier
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
                judges.extend(judge for _, judge in verifier._idle_judges if judge not in judges)

        await verifier.fan_out(1, worker)
        assert not verifier._idle_judges
        return statuses

    assert asyncio.run(run()) == ["pass", "fail", "fail", "pass"]
    assert len(judges) == 1  # one judge served all four attempts
    assert judges[0].state == "stopped"  # and was shut down with the batch
