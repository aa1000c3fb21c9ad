"""--kernel CONNECTION_FILE: a kernel someone else runs (here a nanny that restarts it)."""

from __future__ import annotations

import asyncio

import pytest
import pytest_asyncio
from engine_helpers import Nanny, Recorder, until

from tutor.engine import KernelSession
from tutor.engine.errors import EngineError

# Every test here starts or attaches to a kernel.
pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def nanny(tmp_path_factory):
    keeper = Nanny(tmp_path_factory.mktemp("attached"))
    yield keeper
    keeper.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def attached(nanny):
    session = KernelSession(connection_file=nanny.connection_file, interrupt_grace=1.0)
    await session.start()
    yield session
    await session.shutdown()


async def test_attach_boots_the_kernel(attached, nanny):
    assert attached.state == "ready" and attached.attached
    assert attached.report["pid"] == nanny.kernel_pid()
    r = await attached.execute("import ptfund_checks, sys\nptfund_checks.__name__, str(DEVICE), 'tutor' in sys.modules")
    assert r.result_text == repr(("ptfund_checks", attached.device_info.kind, False))


async def test_interrupt_goes_over_the_control_channel(attached):
    await attached.execute("kept = 1")
    rec = Recorder()
    task = asyncio.ensure_future(attached.execute("print('started', flush=True)\nwhile True:\n    pass", on_output=rec))
    await until(lambda: "started" in rec.text(), 30, "the loop to start")
    await attached.interrupt()
    r = await asyncio.wait_for(task, 60)  # a hang guard; how fast: benchmarks/interrupt.py
    assert r.status == "interrupted"
    assert (await attached.execute("kept")).result_text == "1"


async def test_restart_asks_the_kernel_and_waits_for_it_to_come_back(attached, nanny):
    await attached.execute("kept = 1")
    old = attached.report["pid"]
    await attached.restart()
    assert attached.state == "ready"
    assert attached.report["pid"] != old and attached.report["pid"] == nanny.kernel_pid()
    r = await attached.execute("'kept' in dir(), str(DEVICE)")
    assert r.result_text == repr((False, attached.device_info.kind))


async def test_ignored_interrupt_escalates_to_a_restart(attached):
    old = attached.report["pid"]
    rec = Recorder()
    task = asyncio.ensure_future(
        attached.execute(
            "n = 0\nprint('started', flush=True)\nwhile True:\n    try:\n        while n >= 0:\n            pass\n"
            "    except KeyboardInterrupt:\n        n += 1",
            on_output=rec,
        )
    )
    await until(lambda: "started" in rec.text(), 30, "the loop to start")
    await attached.interrupt()
    r = await asyncio.wait_for(task, 90)
    assert r.status == "interrupted" and "restarted" in r.message
    assert attached.report["pid"] != old
    assert (await attached.execute("1 + 1")).result_text == "2"


async def test_crash_is_noticed_although_the_kernel_comes_back_at_once(attached):
    """The nanny restarts the kernel on the same ports within milliseconds, so the heartbeat
    answers again: the new process is told apart by its session id."""
    old = attached.report["pid"]
    r = await attached.execute("import ctypes\nctypes.string_at(0)", timeout=60)
    assert r.status == "crashed"
    assert r.message in (
        "The Python kernel stopped while your code ran and was started again; earlier variables are gone.",
        "The Python kernel stopped responding while your code ran; it was restarted, so earlier variables are gone.",
    )
    assert attached.report["pid"] != old
    assert (await attached.execute("3")).result_text == "3"


async def test_kernel_restarted_by_its_manager_between_runs(attached, nanny):
    import os
    import signal

    from engine_helpers import pid_alive

    await attached.execute("kept = 1")
    old = attached.report["pid"]
    os.kill(old, signal.SIGKILL)
    await until(lambda: not pid_alive(old), 10, "the kernel to die")
    r = await attached.execute("'kept' in dir(), str(DEVICE)", timeout=60)
    assert r.ok and r.result_text == repr((False, attached.device_info.kind))
    assert r.message.startswith("The Python kernel had stopped since the last run")
    assert attached.report["pid"] != old


async def test_shutdown_leaves_an_attached_kernel_running(nanny):
    session = KernelSession(connection_file=nanny.connection_file)
    await session.start()
    pid = session.report["pid"]
    await session.shutdown()
    again = KernelSession(connection_file=nanny.connection_file)
    try:
        await again.start()
        assert again.report["pid"] == pid
    finally:
        await again.shutdown()


async def test_unreadable_connection_file(tmp_path):
    session = KernelSession(connection_file=tmp_path / "missing.json")
    with pytest.raises(EngineError, match="Cannot read the kernel connection file"):
        await session.start()
