"""Time limits on a busy machine: the limit counts the kernel's CPU time, a check's kernel has
one torch thread, and a time-out says how long the code ran and whether it was progressing."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_app_support import wait_for, wait_ready
from tutor.grading.verify import verify_in_fresh_kernel
from tutor.packs.loader import load_pack
from tutor.packs.scaffold import new_pack

REPO = Path(__file__).resolve().parent.parent
# One busy process per core, all of them children of one process: the machine is busy
# with work that is not the learner's.
BURN = (
    "import multiprocessing as mp, os\n"
    "def spin():\n"
    "    while True:\n"
    "        pass\n"
    "if __name__ == '__main__':\n"
    "    for _ in range(max(2, len(os.sched_getaffinity(0)))):\n"
    "        mp.Process(target=spin, daemon=True).start()\n"
    "    spin()\n"
)


@pytest.fixture
def busy_cores():
    proc = subprocess.Popen([sys.executable, "-c", BURN], start_new_session=True)
    try:
        yield proc
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()


@pytest.fixture(scope="module")
def exercise(tmp_path_factory):
    pack = load_pack(new_pack(tmp_path_factory.mktemp("p") / "demo"))
    return pack.lessons[0].exercises[0]


@pytest.mark.slow
def test_a_timeout_says_how_long_it_ran_and_that_it_was_progressing(exercise):
    code = "i = 0\nwhile True:\n    i += 1\n    if i % 100000 == 0:\n        print(i, flush=True)\n"
    verdict = asyncio.run(verify_in_fresh_kernel(exercise, code, timeout=1))
    assert verdict.status == "timeout", verdict.headline
    assert "s of CPU time (" in verdict.headline and "on the clock)" in verdict.headline, verdict.headline
    assert "making progress" in verdict.headline, verdict.headline
    assert "a loop that never ends" not in verdict.headline, verdict.headline


@pytest.mark.slow
def test_a_quiet_loop_is_not_called_progress(exercise):
    verdict = asyncio.run(verify_in_fresh_kernel(exercise, "while True:\n    pass\n", timeout=1))
    assert verdict.status == "timeout", verdict.headline
    assert "printing nothing" in verdict.headline or "printed nothing" in verdict.headline, verdict.headline
    assert "making progress" not in verdict.headline


@pytest.mark.slow
def test_a_check_kernel_has_one_torch_thread_unless_the_exercise_asks(exercise):
    code = "import torch\nprint('threads', torch.get_num_threads())\n"
    one = asyncio.run(verify_in_fresh_kernel(exercise, code))
    assert "threads 1\n" in one.output, one.output
    two = asyncio.run(verify_in_fresh_kernel(exercise.model_copy(update={"threads": 2}), code))
    assert "threads 2\n" in two.output, two.output


@pytest.mark.slow
def test_the_judge_runs_the_reference_with_the_learner_s_torch_threads(exercise):
    """A reduction split over other threads rounds otherwise: the judge's kernel computes the
    reference with the threads the learner's code ran with."""
    from tutor.packs import models as m

    solution = "import torch\nt = torch.zeros((2, 3), dtype=torch.float64, device=DEVICE)\nref_threads = torch.get_num_threads()\n"
    checks = [m.ValueCheck(kind="value", expr="t.shape[0]", expected="ref_threads")]
    for threads in (1, 2):
        ex = exercise.model_copy(update={"threads": threads, "solution": solution, "checks": checks})
        code = f"import torch\nt = torch.zeros(({threads}, 3))\n"
        verdict = asyncio.run(verify_in_fresh_kernel(ex, code))
        assert verdict.passed, (threads, verdict.feedback())
        wrong = asyncio.run(verify_in_fresh_kernel(ex, f"import torch\nt = torch.zeros(({3 - threads}, 3))\n"))
        assert not wrong.passed, threads


@pytest.mark.slow
def test_cpu_time_not_the_clock_counts_against_the_limit(exercise, busy_cores):
    """About 2 s of CPU work under a 3 s limit (+5 s for the checks) passes while every core
    is busy with other work, however long it takes on the clock."""
    code = (
        "import time\nstart = time.process_time()\n"
        "while time.process_time() - start < 2:\n    pass\n"
        "import torch\nt = torch.zeros(2, 3)\n"
    )
    verdict = asyncio.run(verify_in_fresh_kernel(exercise, code, timeout=3))
    assert verdict.status != "timeout", verdict.headline


@pytest.mark.slow
async def test_the_capstone_passes_in_the_app_while_both_cores_are_busy(tmp_path, busy_cores):
    from tutor.app.app import TutorApp, TutorOptions
    from tutor.app.screens.lesson import LessonScreen

    solution = (REPO / "lessons" / "capstone" / "solution_mlp.py").read_text(encoding="utf-8")
    app = TutorApp(TutorOptions(data_dir=str(tmp_path)))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        app.open_lesson("pytorch-fundamentals", "capstone", "digits-mlp")
        await wait_for(pilot, lambda: isinstance(app.screen, LessonScreen), 60, "the capstone lesson")
        screen = app.screen
        await wait_for(pilot, lambda: screen.query_one("#editor").text.strip() != "", 60, "the starter code")
        await wait_for(pilot, lambda: app.kernel_status.state == "ready", 300, "the kernel")
        screen.query_one("#editor").load_text(solution)
        await pilot.press("ctrl+t")
        checks = screen.query_one("#checks")
        await wait_for(pilot, lambda: checks.verdict is not None, 900, "the verdict")
        assert checks.verdict.passed, checks.verdict.feedback()
