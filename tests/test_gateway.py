"""Kernels through a real Jupyter Kernel Gateway on 127.0.0.1 (--gateway URL)."""

from __future__ import annotations

import asyncio
import csv
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
import pytest_asyncio
from engine_helpers import Recorder, until
from gateway_server import start_gateway, stop_gateway

from tutor.engine import KernelSession
from tutor.packs.catalog import Catalog

pytestmark = pytest.mark.slow
on_module_loop = pytest.mark.asyncio(loop_scope="module")  # the shared remote session's loop


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    gw = start_gateway(tmp_path_factory.mktemp("gateway") / "gateway.log")
    yield gw
    stop_gateway(gw)


@pytest.fixture(scope="module", autouse=True)
def _token(gateway):
    # Sessions in this process read the token from the environment, as the CLI's do.
    old = os.environ.get("PTFUND_TUTOR_GATEWAY_TOKEN")
    os.environ["PTFUND_TUTOR_GATEWAY_TOKEN"] = gateway.token
    yield
    if old is None:
        os.environ.pop("PTFUND_TUTOR_GATEWAY_TOKEN", None)
    else:
        os.environ["PTFUND_TUTOR_GATEWAY_TOKEN"] = old


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def remote(gateway):
    session = KernelSession(gateway=gateway.url, interrupt_grace=2.0)
    await session.start()
    yield session
    await session.shutdown()


def cli(*args: str, home: Path, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess:
    full = {**os.environ, "PTFUND_TUTOR_HOME": str(home), **env}
    full.pop("PTFUND_TUTOR_CACHE", None)
    return subprocess.run(
        [sys.executable, "-m", "tutor", *args], capture_output=True, text=True, env=full, timeout=timeout
    )


@on_module_loop
async def test_run_streams_output_from_a_gateway_kernel(remote, gateway):
    assert remote.state == "ready" and remote.gateway == gateway.url
    assert remote.device_info.kind == "cpu" and remote.checks_error is None
    assert [k["id"] for k in gateway.kernels()] == [remote._backend.kernel_id]
    rec = Recorder()
    r = await remote.execute("import sys\nprint('hello'); print('err', file=sys.stderr)\n6 * 7", on_output=rec)
    assert r.status == "ok" and r.result_text == "42"
    assert "hello" in rec.text() and "err" in rec.text()
    # the check library arrived as source: the gateway's kernel needs no tutor package
    r = await remote.execute("import ptfund_checks, sys\nptfund_checks.__name__, 'tutor' in sys.modules")
    assert r.result_text == "('ptfund_checks', False)"


@on_module_loop
async def test_interrupt_keeps_variables(remote):
    await remote.execute("kept = 'still here'")
    run = asyncio.ensure_future(remote.execute("import time\nwhile True:\n    time.sleep(0.05)"))
    await until(lambda: remote.state == "busy", what="the loop to start")
    await asyncio.sleep(0.5)
    await remote.interrupt()
    r = await run
    assert r.status == "interrupted", r
    r = await remote.execute("kept")
    assert r.result_text == "'still here'"


@on_module_loop
async def test_time_limit(remote):
    r = await remote.execute("while True:\n    pass", timeout=1.0)
    assert r.status == "timeout" and "time limit" in r.message
    r = await remote.execute("1 + 1")
    assert r.result_text == "2"


@on_module_loop
async def test_crash_is_detected_and_the_kernel_comes_back(remote):
    await remote.execute("doomed = 1")
    r = await remote.execute("import os\nos._exit(3)", timeout=60)
    assert r.status == "crashed", r
    assert "variables are gone" in r.message
    r = await remote.execute("'doomed' in globals(), str(DEVICE)")
    assert r.status == "ok" and r.result_text == "(False, 'cpu')"


@on_module_loop
async def test_restart_through_rest(remote):
    await remote.execute("before = 1")
    await remote.restart()
    r = await remote.execute("'before' in globals()")
    assert r.result_text == "False"


@on_module_loop
async def test_shutdown_deletes_the_gateway_kernel(gateway):
    session = KernelSession(gateway=gateway.url)
    await session.start()
    kernel_id = session._backend.kernel_id
    assert kernel_id in [k["id"] for k in gateway.kernels()]
    await session.shutdown()
    assert kernel_id not in [k["id"] for k in gateway.kernels()]


def test_check_and_doctor_through_the_cli(gateway, tmp_path):
    ref = next(Catalog.load().exercises("tensors"))
    good = tmp_path / "good.py"
    good.write_text(ref.exercise.solution)
    env = gateway.env()
    r = cli("--gateway", gateway.url, "check", ref.key, "--file", str(good), home=tmp_path / "h", env=env)
    assert r.returncode == 0, r.stderr
    assert "pass" in r.stdout
    r = cli("doctor", home=tmp_path / "h", env=env)  # the URL from $PTFUND_TUTOR_GATEWAY
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"gateway:        {gateway.url}" in r.stdout
    assert "kernelspecs:    python3 (used)" in r.stdout
    assert "device:         cpu (on the gateway)" in r.stdout


def test_grade_runs_its_jobs_on_the_gateway(gateway, tmp_path):
    ref = next(Catalog.load().exercises("tensors"))
    for learner, code in (("ann", ref.exercise.solution), ("ben", "while True:\n    pass\n")):
        path = tmp_path / "subs" / learner / f"{ref.key}.py"
        path.parent.mkdir(parents=True)
        path.write_text(code)
    started = gateway.log.read_text(errors="replace").count("Kernel started")
    r = cli(
        "grade", str(tmp_path / "subs"), "--lesson", "tensors", "--jobs", "2", "--timeout", "5",
        home=tmp_path / "h", env=gateway.env(),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    book = {row["learner"]: row for row in csv.DictReader(io.StringIO(r.stdout))}
    assert book["ann"][ref.key] == "pass" and book["ben"][ref.key] == "timeout"
    # the verification kernels were the gateway's
    assert gateway.log.read_text(errors="replace").count("Kernel started") >= started + 2


def test_pack_test_through_the_gateway(gateway, tmp_path):
    from tutor.packs.scaffold import new_pack

    pack = new_pack(tmp_path / "demo")
    started = gateway.log.read_text(errors="replace").count("Kernel started")
    r = cli("--gateway", gateway.url, "pack", "test", str(pack), "--trust", home=tmp_path / "h", env=gateway.env())
    assert r.returncode == 0, r.stdout + r.stderr
    assert " 0 failed" in r.stdout
    assert gateway.log.read_text(errors="replace").count("Kernel started") > started


@on_module_loop
async def test_the_apps_live_kernel_and_spares_use_the_gateway(gateway):
    from tutor.app.kernels import Kernels

    ref = next(Catalog.load().exercises("tensors"))
    statuses = []
    os.environ["PTFUND_TUTOR_GATEWAY"] = gateway.url  # as --gateway leaves it for the app
    try:
        kernels = Kernels(device=None, connection_file=None, on_status=statuses.append)
        await kernels.start()
        try:
            assert kernels._live._backend.kernel_id in [k["id"] for k in gateway.kernels()]
            r = await kernels.run("live = 41\nprint(live + 1)", on_event=lambda e: None)
            assert r.status == "ok" and r.output == "42\n"
            verdict = await kernels.verify(ref.exercise, ref.exercise.solution)
            assert verdict.passed, verdict.feedback()
            assert kernels._pool._spares and all(s.gateway == gateway.url for s in kernels._pool._spares)
        finally:
            await kernels.shutdown()
    finally:
        del os.environ["PTFUND_TUTOR_GATEWAY"]
    assert "ready" in [s.state for s in statuses]


@on_module_loop
async def test_kernel_variables_reach_the_gateway_kernel(gateway):
    os.environ["KERNEL_PTFUND_PROBE"] = "from-the-tutor"
    session = KernelSession(gateway=gateway.url)
    try:
        await session.start()
        r = await session.execute("import os\nos.environ.get('KERNEL_PTFUND_PROBE')")
        assert r.result_text == "'from-the-tutor'"
    finally:
        del os.environ["KERNEL_PTFUND_PROBE"]
        await session.shutdown()


def test_a_wrong_token_is_one_sentence(gateway, tmp_path):
    r = cli("doctor", home=tmp_path / "h", env={**gateway.env(), "PTFUND_TUTOR_GATEWAY_TOKEN": "wrong"})
    assert r.returncode == 1
    assert "refused the request (401): set its token in PTFUND_TUTOR_GATEWAY_TOKEN" in r.stdout
    assert "Traceback" not in r.stdout + r.stderr


def test_kernel_and_gateway_together_is_a_usage_error(tmp_path):
    r = cli(
        "--gateway", "http://127.0.0.1:1", "--kernel", "k.json", "list",
        home=tmp_path / "h", env={},
    )  # fmt: skip
    assert r.returncode == 2 and "give one of them" in r.stderr
