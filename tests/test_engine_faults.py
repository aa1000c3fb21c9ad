"""Faults that take the kernel down: each must leave the session usable, with one sentence.

One session for the module: it outlives every restart, which is part of what is tested.
"""

from __future__ import annotations

import asyncio
import os
import signal

import pytest
import pytest_asyncio
from engine_helpers import Recorder, pid_alive, until

from tutor.engine import KernelSession
from tutor.engine.events import StateEvent

# Every test here starts or attaches to a kernel.
pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

GONE = "it was restarted, so earlier variables are gone."


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def kernel():
    session = KernelSession(interrupt_grace=1.0)
    await session.start()
    yield session
    await session.shutdown()


async def crash_and_check(kernel, code, expected_message, **kwargs):
    """Run ``code``; expect a crash with ``expected_message`` and a working, fresh kernel."""
    await kernel.execute("kept = 1")
    old_pid = kernel.report["pid"]
    states = []
    kernel.on_state = states.append
    rec = Recorder()
    try:
        r = await kernel.execute(code, on_output=rec, **kwargs)
    finally:
        kernel.on_state = None
    assert r.message == expected_message
    assert kernel.state == "ready" and kernel.report["pid"] != old_pid
    assert [s.state for s in states][-3:] == ["dead", "restarting", "ready"] or [s.state for s in states][-2:] == [
        "restarting",
        "ready",
    ]
    assert any(isinstance(e, StateEvent) and e.message == expected_message for e in rec.events)
    after = await kernel.execute("'kept' in dir(), str(DEVICE)")
    assert after.ok and after.result_text == repr((False, kernel.device_info.kind))
    return r


async def test_segfault(kernel):
    r = await crash_and_check(
        kernel,
        "import ctypes\nctypes.string_at(0)",
        f"Your code crashed the Python kernel (segmentation fault); {GONE}",
    )
    assert r.status == "crashed"


async def test_os_exit(kernel):
    r = await crash_and_check(
        kernel,
        "import os\nos._exit(3)",
        f"Your code made the Python kernel exit with status 3 (as os._exit does); {GONE}",
    )
    assert r.status == "crashed"


async def test_output_printed_just_before_os_exit_is_kept(kernel):
    r = await crash_and_check(
        kernel,
        "import os, sys\nprint('saved the model')\nprint('oops', file=sys.stderr)\nos._exit(0)",
        f"Your code made the Python kernel exit with status 0 (as os._exit does); {GONE}",
    )
    assert r.status == "crashed"
    assert "saved the model\n" in r.output and "oops\n" in r.output


async def test_output_before_a_crash_is_kept(kernel):
    r = await kernel.execute(
        "import ctypes, sys\nprint('before', flush=True)\nsys.stdout.flush()\n"
        "import time; time.sleep(0.3)\nctypes.string_at(0)"
    )
    assert r.status == "crashed" and r.output == "before\n"


async def test_interrupt_ignored_is_escalated_to_a_restart(kernel):
    await kernel.execute("kept = 1")
    old_pid = kernel.report["pid"]
    rec = Recorder()
    # Catches every KeyboardInterrupt (a `while n >= 0` loop: CPython 3.11 does not route the
    # interrupt of a bare `while True: pass` inside try to its except clause).
    task = asyncio.ensure_future(
        kernel.execute(
            "n = 0\nwhile True:\n    try:\n        if n == 0:\n            print('started', flush=True)\n"
            "        while n >= 0:\n            pass\n    except KeyboardInterrupt:\n        n += 1",
            on_output=rec,
        )
    )
    await until(lambda: "started" in rec.text(), 30, "the loop to start")
    await kernel.interrupt()
    r = await asyncio.wait_for(task, 60)
    assert r.status == "interrupted"
    assert r.message == (
        "Your code did not stop when interrupted (it may catch KeyboardInterrupt), "
        "so the kernel was restarted; earlier variables are gone."
    )
    assert kernel.report["pid"] != old_pid
    assert (await kernel.execute("'kept' in dir()")).result_text == "False"


async def test_the_loop_from_the_issue_ends_either_way(kernel):
    """The brief's example: on CPython 3.11 the interrupt escapes the try (so it stops at
    once); on versions where it is caught, the escalation ends it."""
    rec = Recorder()
    task = asyncio.ensure_future(
        kernel.execute(
            "print('started', flush=True)\nwhile True:\n try:\n  while True: pass\n except KeyboardInterrupt: pass",
            on_output=rec,
        )
    )
    await until(lambda: "started" in rec.text(), 30, "the loop to start")
    await kernel.interrupt()
    r = await asyncio.wait_for(task, 60)
    assert r.status == "interrupted" and r.message
    assert (await kernel.execute("1")).ok


async def test_timeout_on_a_loop_that_ignores_interrupts(kernel):
    await kernel.execute("kept = 1")
    r = await asyncio.wait_for(
        kernel.execute(
            "import time\nwhile True:\n    try:\n        time.sleep(10)\n    except KeyboardInterrupt:\n        pass",
            timeout=0.5,
        ),
        120,
    )  # a hang guard, not a timing
    assert r.status == "timeout"
    assert r.message == (
        "Your code ran past the 0.5 s time limit and did not stop when interrupted, "
        "so the kernel was restarted; earlier variables are gone."
    )
    assert (await kernel.execute("'kept' in dir()")).result_text == "False"


async def test_kernel_killed_between_runs(kernel):
    await kernel.execute("kept = 1")
    pid = kernel.report["pid"]
    os.kill(pid, signal.SIGKILL)
    await until(lambda: not pid_alive(pid), 10, "the kernel to die")
    await until(lambda: _not(kernel.is_alive()), 10, "the session to see it")
    states = []
    kernel.on_state = states.append
    rec = Recorder()
    try:
        r = await kernel.execute("print('hello again')", on_output=rec)
    finally:
        kernel.on_state = None
    assert r.status == "ok" and r.output == "hello again\n"
    assert r.message == (
        "The Python kernel had stopped since the last run (killed by SIGKILL, often because "
        "it ran out of memory), so a new one was started; earlier variables are gone."
    )
    assert [s.state for s in states][:3] == ["dead", "restarting", "ready"]
    assert isinstance(rec.events[0], StateEvent) and rec.events[0].message == r.message
    assert kernel.report["pid"] != pid


async def _not(awaitable):
    return not await awaitable


async def test_restart_on_request(kernel):
    await kernel.execute("kept = 1")
    pid = kernel.report["pid"]
    await kernel.restart()
    assert kernel.state == "ready" and kernel.report["pid"] != pid
    r = await kernel.execute("'kept' in dir(), 'ptfund_checks' in __import__('sys').modules")
    assert r.result_text == "(False, True)"


async def test_restart_during_a_run(kernel):
    rec = Recorder()
    task = asyncio.ensure_future(
        kernel.execute("print('started', flush=True)\nimport time\ntime.sleep(60)", on_output=rec)
    )
    await until(lambda: "started" in rec.text(), 30, "the run to start")
    await kernel.restart()
    r = await asyncio.wait_for(task, 30)
    assert r.status == "interrupted"
    assert r.message == "The kernel was restarted while your code ran; earlier variables are gone."
    assert (await kernel.execute("2")).result_text == "2"


async def test_shutdown_then_start_again(kernel):
    await kernel.shutdown()
    assert kernel.state == "stopped" and not await kernel.is_alive()
    # A run asked for now starts the kernel on demand; interrupted before it is sent, it
    # never runs.
    task = asyncio.ensure_future(kernel.execute("never_set = 1"))
    await until(lambda: kernel.state == "starting", 10, "the kernel to start")
    await kernel.interrupt()
    r = await asyncio.wait_for(task, 120)
    assert r.status == "interrupted"
    assert r.message == "Your code was stopped before it started running; nothing changed in the kernel."
    r = await kernel.execute("'never_set' in dir(), 3")
    assert r.result_text == "(False, 3)" and kernel.state == "ready"


async def test_these_kernels_are_forked(kernel):
    """Every fault above was handled in a kernel from the fork server (where it is used)."""
    import sys

    from tutor.engine.launch import FORK

    if sys.platform.startswith("linux"):
        assert kernel.launcher == FORK
