"""The warm server: one per data dir, shared by concurrent clients, ended when idle,
replaced when it runs other code, and a fallback to the in-process check where it cannot
run. Real processes, real kernels, a real socket and a real progress store."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tutor.grading.warm import protocol as p
from tutor.grading.warm.client import _ask, ping, stop_server
from tutor.progress.store import ProgressStore

WRONG = "t = 1\n"
TARGET = "tensors/features-and-labels"


def poll(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.1)


@pytest.fixture
def warm_env(monkeypatch):
    monkeypatch.delenv(p.ENV_OFF, raising=False)
    monkeypatch.setenv(p.ENV_IDLE, "120")
    return os.environ


@pytest.fixture
def data(tmp_path, warm_env):
    path = tmp_path / "d"
    yield path
    stop_server(path)


def check(data: Path, code: str, target: str = TARGET, *extra: str) -> subprocess.CompletedProcess:
    file = data.parent / f"code-{time.monotonic_ns()}.py"
    file.write_text(code, encoding="utf-8")
    cmd = [sys.executable, "-m", "tutor", "--data-dir", str(data), "check", target, "--file", str(file), *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


def server_pid(data: Path) -> int | None:
    reply = _ask(data, {"op": "ping", "digest": p.digest()}, timeout=5)
    return reply.get("pid") if reply and not reply.get("stale") else None


def attempts(data: Path) -> int:
    store = ProgressStore.open(data)
    try:
        return len(store.attempts_for("pytorch-fundamentals", TARGET))
    finally:
        store.close()


@pytest.mark.slow
def test_concurrent_checks_share_one_server_and_record_every_attempt(data):
    with ThreadPoolExecutor(3) as pool:
        runs = list(pool.map(lambda _: check(data, WRONG), range(3)))
    for run in runs:
        assert run.returncode == 1, run.stdout + run.stderr
        assert "you did not define features" in run.stdout
        assert run.stderr == ""
    pid = server_pid(data)
    assert pid is not None
    again = check(data, WRONG)
    assert again.returncode == 1 and server_pid(data) == pid  # the same server answered
    assert attempts(data) == 4
    assert stop_server(data)
    assert not p.socket_path(data).exists()


@pytest.mark.slow
def test_an_idle_server_ends(data, monkeypatch):
    monkeypatch.setenv(p.ENV_IDLE, "1")
    assert check(data, WRONG).returncode == 1
    poll(lambda: not p.socket_path(data).exists(), 60, "the idle server to end")
    assert not ping(data, p.digest())


OLD_SERVER = (
    "import sys\n"
    "import tutor.grading.warm.protocol as p\n"
    "p.digest = lambda: 'old-version'\n"
    "from tutor.grading.warm import server\n"
    "sys.exit(server.main(['server', sys.argv[1]]))\n"
)


@pytest.mark.slow
def test_a_server_of_other_code_is_replaced(data):
    data.mkdir()
    old = subprocess.Popen([sys.executable, "-c", OLD_SERVER, str(data)])
    try:
        poll(lambda: ping(data, "old-version"), 120, "the old server")
        run = check(data, WRONG)
        assert run.returncode == 1, run.stdout + run.stderr
        assert "you did not define features" in run.stdout
        assert old.wait(timeout=120) == 0  # told it is stale, it stopped
        assert ping(data, p.digest())  # a server of this code took its place
    finally:
        if old.poll() is None:
            old.kill()
            old.wait()


@pytest.mark.slow
def test_without_a_server_check_verifies_in_its_own_process(tmp_path, warm_env):
    data = tmp_path / ("d" * 120)  # too long for a Unix socket's path
    run = check(data, WRONG)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "you did not define features" in run.stdout
    assert not p.socket_path(data).exists()


@pytest.mark.slow
def test_a_learners_mistake_in_the_command_is_one_line_from_the_server(data):
    run = check(data, WRONG, "tensors/no-such-exercise")
    assert run.returncode == 2
    assert run.stderr.startswith("ptfund-tutor: lesson 'tensors' has no exercise 'no-such-exercise'")
    assert len(run.stderr.splitlines()) == 1
    assert server_pid(data) is not None  # it came from the server


@pytest.mark.slow
def test_predict_cards_of_the_quiz_run_in_the_servers_fresh_kernels(data):
    from tutor.grading.warm.client import predict_reply

    outcome = predict_reply(data, "x = 40\nprint(x + 2)\n")
    assert outcome is not None and outcome.ok and outcome.key == "42"
    assert predict_reply(data, "print(x)\n").key == "NameError"  # a fresh kernel: x is not there
    run = subprocess.run(
        [sys.executable, "-m", "tutor", "--data-dir", str(data), "quiz", "--lesson", "views-strides"],
        input="zzz\n" * 40,  # a wrong answer to each: a predict card's code runs before it is graded
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "It prints:" in run.stdout  # a predict card's code ran
    assert "Starting a Python kernel" not in run.stdout  # in the server, not in the quiz's process


@pytest.mark.slow
def test_a_cold_check_starts_the_server_before_parsing_and_a_mistyped_command_starts_none(tmp_path, warm_env):
    # The server's fork server imports torch for seconds: a check that will ask it starts it
    # first thing. A command that will not ask it (help, another command, a missing file, an
    # attached kernel) starts nothing.
    from tutor import cli
    from tutor.grading.warm import client

    code = tmp_path / "code.py"
    code.write_text(WRONG, encoding="utf-8")
    quiet = [
        ["--data-dir", str(tmp_path / "a"), "check", TARGET, "--file", str(code), "--help"],
        ["--data-dir", str(tmp_path / "b"), "check", TARGET, "--file", str(tmp_path / "missing.py")],
        ["--data-dir", str(tmp_path / "c"), "check", TARGET, "--file", str(code), "--kernel", "k.json"],
        ["--data-dir", str(tmp_path / "d"), "list", "--json"],
    ]
    for argv in quiet:
        cli._start_warm_server_early(argv)
    assert not client._early
    data = tmp_path / "e"
    try:
        cli._start_warm_server_early(["--data-dir=" + str(data), "check", TARGET, f"--file={code}"])
        assert list(client._early) == [data.resolve()]
        # the request that follows waits for that server instead of starting another
        assert client.start_server(data, p.digest())
        assert not client._early
        pid = server_pid(data)
        assert pid is not None
        assert client.start_server(data, p.digest()) and server_pid(data) == pid
    finally:
        client._early.clear()
        stop_server(data)


def test_the_server_loads_packs_on_its_loop_thread(tmp_path, monkeypatch):
    # Loading validates the packs' Python with the ast module, and CPython 3.11's AST
    # conversion fails when two threads convert at once ("AST constructor recursion depth
    # mismatch"): another request's verification parses on the loop's thread meanwhile.
    import asyncio
    import threading

    from tutor.grading.warm.serving import WarmServer
    from tutor.packs.catalog import Catalog

    threads = []
    real = Catalog.load.__func__

    def load(cls, *args, **kwargs):
        threads.append(threading.current_thread())
        return real(cls, *args, **kwargs)

    monkeypatch.setattr(Catalog, "load", classmethod(load))

    async def ask():
        server = WarmServer(tmp_path, p.digest(), idle=60)
        reply = await server.verify({"target": "no-such-lesson/no-such-exercise", "code": "", "packs": []})
        return reply, threading.current_thread()

    reply, loop_thread = asyncio.run(ask())
    assert reply.get("exit_code") == 2 and "no-such-lesson" in reply["error"]
    assert threads == [loop_thread]
