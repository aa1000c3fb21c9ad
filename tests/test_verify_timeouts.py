"""A check that runs out of time says where the time went, from a real kernel's interrupt."""

from __future__ import annotations

import asyncio

import pytest

from tutor.grading.timeouts import SETUP, YOUR_CODE, timeout_sentence
from tutor.grading.verify import verify_in_fresh_kernel
from tutor.packs.loader import load_pack
from tutor.packs.scaffold import new_pack


def test_file_names_match_the_check_library():
    from tutor.checks import namespaces

    assert (YOUR_CODE, SETUP) == (namespaces.YOUR_CODE, namespaces.SETUP)


@pytest.fixture(scope="module")
def exercise(tmp_path_factory):
    pack = load_pack(new_pack(tmp_path_factory.mktemp("p") / "demo"))
    return pack.lessons[0].exercises[0]


def verify(exercise, code: str):
    # verify_in_fresh_kernel shuts its kernel down before it returns.
    return asyncio.run(verify_in_fresh_kernel(exercise, code, timeout=1))


@pytest.mark.slow
@pytest.mark.parametrize(
    "code,expected",
    [
        ("import time\ntime.sleep(60)\n", "still waiting at line 2 (`time.sleep(60)`)"),
        ("while True:\n    pass\n", "still looping at line 1 (`while True:`) when"),
    ],
    ids=["sleep", "loop"],
)
def test_timeout_names_the_line_it_stopped_at(exercise, code, expected):
    verdict = verify(exercise, code)
    assert verdict.status == "timeout" and expected in verdict.headline, verdict.headline
    assert "1 s time limit" in verdict.headline


@pytest.mark.slow
def test_slow_setup_is_not_blamed_on_the_learner(exercise):
    slow = exercise.model_copy(update={"setup": "import time\ntime.sleep(60)\n"})
    verdict = verify(slow, "t = 1\n")
    assert verdict.status == "timeout"
    assert verdict.headline.startswith("The exercise's setup code did not finish"), verdict.headline
    assert "loop" not in verdict.headline


def test_no_traceback_at_all_says_it_did_not_stop():
    sentence = timeout_sentence(None, 5)
    assert "did not stop when interrupted" in sentence and "5 s time limit" in sentence
