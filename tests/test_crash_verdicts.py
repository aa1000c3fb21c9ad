"""A verification's kernel is thrown away, so a crash verdict says what happened and nothing
of a restart, for every sentence the engine can end a run with."""

from __future__ import annotations

import pytest

from tutor.engine import faults
from tutor.engine.events import RunResult
from tutor.grading.verify import verdict_from_run

TOLD_WELL = {
    "segfault": faults.crashed(-11),
    "exit": faults.crashed(3),
    "sigkill": faults.crashed(-9),
}
# What the old verdicts got wrong: "... while your code ran while it was being checked." and
# "... was started again; earlier variables are gone."
TOLD_WRONG = {
    "sigterm": faults.crashed(-15),
    "silent heartbeat": faults.crashed(None),
    "replaced": faults.crashed("replaced"),
    "gateway": faults.crashed(None, wire="The gateway closed the kernel's websocket"),
}


def _headline(sentence: str) -> str:
    return verdict_from_run(RunResult(status="crashed", message=sentence), 20).headline


def _told_once_without_a_restart(headline: str) -> bool:
    return "earlier variables" not in headline and "started again" not in headline and headline.count(" while ") <= 1


@pytest.mark.parametrize("sentence", list(TOLD_WELL.values()), ids=list(TOLD_WELL))
def test_a_crash_verdict_promises_no_restart_and_says_while_once(sentence: str):
    assert _told_once_without_a_restart(_headline(sentence)), _headline(sentence)


@pytest.mark.parametrize("sentence", list(TOLD_WRONG.values()), ids=list(TOLD_WRONG))
def test_a_crash_verdict_after_a_silent_or_replaced_kernel_too(sentence: str):
    assert _told_once_without_a_restart(_headline(sentence)), _headline(sentence)
