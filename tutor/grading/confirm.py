"""A crash is confirmed on a fresh kernel before it counts against the code.

A kernel can die for reasons that are not the code's: the fork server it was forked from
was killed (its kernels die with it), the machine's memory killer chose it for another
process's sake, the tutor's own machinery failed. Such a verdict says nothing about the
learner, so ``grade`` and ``pack test`` verify a crashed case again on a fresh kernel; only
a crash that happens again is the code's (and only then is it cached). Code that really
crashes the kernel is deterministic enough to crash it twice.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from tutor.grading.verdict import Verdict

if TYPE_CHECKING:
    from tutor.grading.verify import Verifier
    from tutor.packs import models as m

log = logging.getLogger("tutor.grading")


async def verify_confirmed(
    verifier: Verifier, exercise: m.Exercise, code: str, *, timeout: float | None = None
) -> Verdict:
    """``verifier.verify``; a crash is verified once more, on a fresh kernel, and the second
    verdict is the one that counts."""
    verdict = await verifier.verify(exercise, code, timeout=timeout)
    if verdict.status == "crashed":
        log.info("verifying %s again on a fresh kernel: it crashed (%s)", exercise.id, verdict.headline)
        verdict = await verifier.verify(exercise, code, timeout=timeout)
    return verdict
