"""The warm spare pool, device selection and doctor: each starts its own kernels."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys

import pytest

from tutor.engine import KernelPool, KernelSession
from tutor.engine.errors import DeviceUnavailable, EngineError

# Every test here starts kernels.
pytestmark = pytest.mark.slow


async def test_pool_hands_out_started_kernels_and_warms_the_next():
    pool = KernelPool(size=1)
    taken = []
    try:
        await pool.start()
        await pool.ready()
        spare = pool._spares[0]
        first = await pool.take()
        taken.append(first)
        assert first is spare  # the kernel that was already warm: no start on the critical path
        assert first.state == "ready"
        r = await first.execute("import sys\n'ptfund_checks' in sys.modules, 'torch' in sys.modules, str(DEVICE)")
        assert r.result_text == repr((True, True, first.device_info.kind))
        # The spare ran the check library's warm-up: its meta-device op imports sympy (torch
        # type-promotes with it), which `import torch` does not (torch._dynamo may wait:
        # a fork server's first kernels are forked before it, lazydynamo.py).
        assert (await first.execute("'sympy' in sys.modules")).result_text == "True"
        # No replacement starts while the taken kernel is in use (it would take cores from
        # the verification a person waits for); one starts as it is given back.
        assert pool._spares == []
        taken.remove(first)
        pool.give_back(first)
        assert len(pool._spares) == 1 and not pool._prepared[pool._spares[0]].done()  # warming
        second = await pool.take()
        taken.append(second)
        assert second.report["pid"] != first.report["pid"]
        assert (await second.execute("'r' in dir()")).result_text == "False"
    finally:
        await asyncio.gather(*(k.shutdown() for k in taken))
        await pool.shutdown()
    assert first.state == "stopped" and all(k.state == "stopped" for k in taken)


async def test_a_kernel_its_taker_shut_down_itself_counts_as_back():
    pool = KernelPool(size=1)
    try:
        first = await pool.take()
        assert pool._spares == []
        await first.shutdown()  # not given back
        second = await pool.take()  # the pool sees the first is gone: a spare warms again
        assert len(pool._spares) == 0 and second.state == "ready"
        pool.give_back(second)
        assert len(pool._spares) == 1
    finally:
        await pool.shutdown()


async def test_a_pool_told_its_demand_starts_no_kernel_nobody_takes():
    pool = KernelPool(size=2, demand=3)
    taken = []
    try:
        await pool.start()
        assert len(pool._spares) == 2
        taken.append(await pool.take())
        assert len(pool._spares) == 2  # two more will be taken
        taken.append(await pool.take())
        assert len(pool._spares) == 1
        taken.append(await pool.take())
        assert pool._spares == []  # the batch is done: no spare to start and throw away
        taken.append(await pool.take())  # one more than announced still gets a kernel
        assert (await taken[-1].execute("1 + 1")).result_text == "2"
        assert len({k.report["pid"] for k in taken}) == 4
    finally:
        await asyncio.gather(*(k.shutdown() for k in taken))
        await pool.shutdown()


async def test_kernels_side_by_side_share_the_cores_for_torch_threads():
    from tutor.engine.pool import usable_cores

    pool = KernelPool(size=2, demand=1)
    kernel = None
    try:
        kernel = await pool.take()
        share = max(1, usable_cores() // 2)
        assert kernel.report["threads"] == share
        assert (await kernel.execute("import torch; torch.get_num_threads()")).result_text == str(share)
    finally:
        if kernel is not None:
            await kernel.shutdown()
        await pool.shutdown()
    alone = KernelSession(threads=3)
    try:
        await alone.start()
        assert (await alone.execute("import torch; torch.get_num_threads()")).result_text == "3"
    finally:
        await alone.shutdown()


async def test_pool_replaces_a_spare_that_died():
    pool = KernelPool()
    taken = None
    try:
        await pool.start()
        await pool.ready()
        spare = pool._spares[0]
        await spare._backend.km.shutdown_kernel(now=True)  # dies while waiting in the pool
        taken = await pool.take()
        assert taken is not spare and (await taken.execute("1")).ok
    finally:
        if taken is not None:
            await taken.shutdown()
        await pool.shutdown()


async def test_unavailable_device_is_one_sentence():
    session = KernelSession(device="mps" if sys.platform != "darwin" else "cuda")
    with pytest.raises(DeviceUnavailable) as err:
        await session.start()
    text = str(err.value)
    assert text.startswith("--device") and "not available" in text and text.endswith(".")
    assert "\n" not in text
    assert session.state == "stopped"


def test_unknown_device_is_refused():
    with pytest.raises(EngineError):
        KernelSession(device="tpu")


async def test_a_fresh_kernel_runs_on_the_requested_device():
    session = KernelSession(device="cpu")
    try:
        await session.start()
        r = await session.execute(
            "print('hi')\nimport torch\nx = torch.zeros(2, device=DEVICE)\nx.device.type, 2 * 21", timeout=60
        )
    finally:
        await session.shutdown()
    assert r.ok and r.output == "hi\n" and r.result_text == "('cpu', 42)"


def test_doctor_reports_versions_device_and_start_time(tmp_path):
    code = (
        "import sys\nfrom tutor.cli import main\nrc = main(['--data-dir', sys.argv[1], 'doctor'])\n"
        "print('torch imported:', 'torch' in sys.modules)\nsys.exit(rc)"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=300)
    out = proc.stdout
    assert proc.returncode == 0 or "checks:" in out, proc.stderr
    for label in (
        "python:",
        "torch:",
        "textual:",
        "jupyter_client:",
        "ipykernel:",
        "device:",
        "data dir:",
        "kernel ready:",
    ):
        assert label in out, out
    assert str(tmp_path) in out
    assert "torch imported: False" in out
    ready = next(line for line in out.splitlines() if line.startswith("kernel ready:"))
    assert float(ready.split()[2]) > 0
    if "kernels from:   fork server" in out:  # the first kernel started the server; the next is timed too
        assert re.search(r"; the next one \d+\.\d\d s \(the first started the fork server\)$", ready), ready


async def test_a_warm_up_that_fails_says_why(monkeypatch, caplog):
    """A kernel whose check library cannot be imported is not warmed: the warm-up says so
    (in the log, with the error) instead of leaving the first verification to pay it unseen."""
    from tutor.engine.pool import warm_up

    monkeypatch.setenv("PTFUND_TUTOR_LAUNCHER", "spawn")  # a new process: its warm-up runs in it
    session = KernelSession()
    try:
        await session.start()
        await session.execute("import sys\nsys.modules['ptfund_checks'] = None\n")
        with caplog.at_level("WARNING", logger="tutor.engine"):
            await warm_up(session, timeout=60)
        assert re.search(r"warm-up did not finish \((ModuleNotFound|Import)Error: .*ptfund_checks", caplog.text), (
            caplog.text
        )
    finally:
        await session.shutdown()


async def test_a_spare_rehearses_only_while_nobody_waits_for_it(monkeypatch):
    """A waiting spare verifies a trivial exercise in both roles (what a forked kernel's
    first verification would pay, paid early); one taken before its warm-up ended (a cold
    start: the request came first) is handed over at once, unrehearsed."""
    from tutor.engine import pool as pool_module

    rehearsed: list[KernelSession] = []
    real = pool_module.rehearse

    async def counted(session: KernelSession, timeout: float = 60) -> None:
        rehearsed.append(session)
        await real(session, timeout)

    monkeypatch.setattr(pool_module, "rehearse", counted)
    pool = KernelPool(size=1)
    taken = []
    try:
        await pool.start()
        taken.append(await pool.take())  # at once: the request came before the kernel
        assert rehearsed == []
        assert (await taken[0].execute("1 + 1")).result_text == "2"
        pool.give_back(taken.pop())
        await pool.settled()  # its replacement waits for nobody: it rehearses
        assert rehearsed == pool._spares
        taken.append(await pool.take())
        assert taken[0] is rehearsed[0]
    finally:
        await asyncio.gather(*(k.shutdown() for k in taken))
        await pool.shutdown()
