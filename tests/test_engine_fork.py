"""Kernels forked from the fork server: isolated from each other, tied to the server's and
the tutor's lives, and replaced by new processes when the server cannot be used."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from engine_helpers import pid_alive, until

from tutor.engine import KernelPool, KernelSession, forkclient
from tutor.engine.errors import EngineError
from tutor.engine.launch import FORK, SPAWN

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks on Linux")]

# What one verification may leave behind in its process; the next must see none of it.
LEAVE_TRACES = textwrap.dedent(
    """
    import os, random, sys, threading, wave
    import numpy, torch
    first_draw = numpy.random.rand(3).tolist()
    torch.rand(1000); numpy.random.rand(1000); random.random()
    torch.ptfund_mark = 1
    threading.Thread(target=threading.Event().wait, name="ptfund-left-behind", daemon=True).start()
    leaked = open(os.devnull)
    first_draw, leaked.fileno()
    """
)

LOOK_FOR_TRACES = textwrap.dedent(
    """
    import os, sys, threading, torch
    def open_files():
        links = []
        for fd in os.listdir('/proc/self/fd'):
            try:
                links.append(os.readlink(f'/proc/self/fd/{fd}'))
            except OSError:
                pass  # the listing's own descriptor, closed by now
        return links
    # Unused since seeded: the default generator draws what a new one on its seed draws.
    fresh = torch.Generator().manual_seed(torch.initial_seed())
    unused = bool((torch.rand(3) == torch.rand(3, generator=fresh)).all())
    (unused, __import__('numpy').random.rand(3).tolist(), 'wave' in sys.modules, hasattr(torch, 'ptfund_mark'),
     [t.name for t in threading.enumerate() if t.name == 'ptfund-left-behind'],
     open_files().count(os.devnull))
    """
)


async def test_nothing_of_one_verification_is_visible_to_the_next():
    pool = KernelPool(size=1)
    try:
        await pool.start()
        first = await pool.take()
        assert first.launcher == FORK
        left = await first.execute(LEAVE_TRACES)
        assert left.ok, left.error
        first_draw, _ = eval(left.result_text)
        nulls_before = (await first.execute(LOOK_FOR_TRACES)).result_text
        await first.shutdown()

        second = await pool.take()
        try:
            assert second.launcher == FORK and second.report["pid"] != first.report["pid"]
            looked = await second.execute(LOOK_FOR_TRACES)
            assert looked.ok, looked.error
            unused, draw, has_wave, marked, threads, nulls = eval(looked.result_text)
            # Generators start as in a new process, whatever the last kernel drew.
            assert unused and draw != first_draw
            assert not has_wave and not marked and threads == []
            assert nulls < eval(nulls_before)[5]  # the file left open is not open here
        finally:
            await second.shutdown()
    finally:
        await pool.shutdown()


async def test_a_kernel_dies_with_its_fork_server_and_the_session_recovers():
    session = KernelSession()
    try:
        await session.start()
        assert session.launcher == FORK
        server = forkclient.shared_server({})
        kernel_pid = session.report["pid"]
        os.kill(server.pid, signal.SIGKILL)
        await until(lambda: not pid_alive(kernel_pid), 10, "the forked kernel to die with its server")
        r = await session.execute("1 + 1")
        assert r.result_text == "2" and "stopped since the last run" in (r.message or "")
        assert session.launcher == FORK and forkclient.shared_server({}).pid != server.pid
    finally:
        await session.shutdown()


TUTOR = textwrap.dedent(
    """
    import asyncio, sys
    from tutor.engine import KernelSession
    from tutor.engine import forkclient

    async def main():
        session = KernelSession()
        await session.start()
        print(forkclient.shared_server({}).pid, session.report["pid"], session.launcher, flush=True)
        await asyncio.sleep(600)

    asyncio.run(main())
    """
)


def test_the_server_and_its_kernels_never_outlive_the_tutor():
    tutor = subprocess.Popen([sys.executable, "-c", TUTOR], stdout=subprocess.PIPE, text=True)
    try:
        server_pid, kernel_pid, launcher = tutor.stdout.readline().split(maxsplit=2)
        assert launcher.strip() == FORK
        tutor.kill()  # no atexit, no cleanup: only the death signals are left
        tutor.wait()
        import asyncio

        asyncio.run(until(lambda: not pid_alive(int(server_pid)), 10, "the fork server to exit"))
        asyncio.run(until(lambda: not pid_alive(int(kernel_pid)), 10, "its kernel to exit"))
    finally:
        if tutor.poll() is None:
            tutor.kill()


async def test_spawn_is_used_when_asked_for(monkeypatch):
    monkeypatch.setenv("PTFUND_TUTOR_LAUNCHER", "spawn")
    session = KernelSession()
    try:
        await session.start()
        assert session.launcher == f"{SPAWN} (PTFUND_TUTOR_LAUNCHER=spawn)"
        assert (await session.execute("1 + 1")).result_text == "2"
    finally:
        await session.shutdown()


async def test_a_server_that_cannot_start_falls_back_to_new_processes(monkeypatch):
    forkclient.shutdown_shared()
    monkeypatch.setattr(forkclient, "SERVER_CODE", "import sys; sys.exit(3)")
    session = KernelSession()
    try:
        await session.start()
        assert session.launcher == f"{SPAWN} (the fork server exited while warming up (status 3))"
        assert (await session.execute("1 + 1")).result_text == "2"
    finally:
        await session.shutdown()
        forkclient.shutdown_shared()


@pytest.fixture
def first_port_taken(monkeypatch):
    """jupyter_client's first port pick is one another process is listening on."""
    import socket

    from jupyter_client.connect import LocalPortCache

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    picked: list[int] = []
    find = LocalPortCache.find_available_port

    def first_pick_is_taken(self, ip):
        picked.append(port if not picked else find(self, ip))
        return picked[-1]

    monkeypatch.setattr(LocalPortCache, "find_available_port", first_pick_is_taken)
    yield port, picked
    taken.close()


async def test_ports_taken_by_another_process_are_picked_again(monkeypatch, first_port_taken):
    """A new process binds ports picked a moment before; another process may take one."""
    monkeypatch.setenv("PTFUND_TUTOR_LAUNCHER", "spawn")
    port, picked = first_port_taken
    session = KernelSession()
    try:
        await session.start()
        assert (await session.execute("1 + 1")).result_text == "2"
        assert picked[0] == port and port not in picked[1:] and len(picked) >= 10  # a second set of five ports
    finally:
        await session.shutdown()


def read_json(path: str) -> dict:
    return json.loads(Path(path).read_text())


async def test_a_forked_kernel_listens_on_ports_of_its_own(first_port_taken):
    """A forked kernel binds before it is asked for, on ports it chose; the manager and
    its connection file take those, so a port picked for it and taken meanwhile is moot."""
    port, picked = first_port_taken
    session = KernelSession()
    try:
        await session.start()
        assert session.launcher == FORK
        assert (await session.execute("1 + 1")).result_text == "2"
        km = session._backend.km
        ports = {km.shell_port, km.iopub_port, km.stdin_port, km.control_port, km.hb_port}
        written = read_json(km.connection_file)
        assert {
            written[name] for name in ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")
        } == ports
        assert written["key"] == km.session.key.decode()
        assert picked[0] == port and port not in ports and len(picked) == 5  # one start, no retry
        # The kernel knows where its connection is written (%connect_info shows it).
        where = await session.execute("get_ipython().kernel.parent.connection_file")
        assert where.result_text == repr(km.connection_file)
    finally:
        await session.shutdown()


async def test_a_forked_kernel_has_the_environment_directory_and_log_asked_for(tmp_path):
    """The kernel was built before the request: what the request names still holds, and
    what ipykernel set for itself (the inline matplotlib backend) is kept."""
    session = KernelSession(extra_env={"PTFUND_PROBE": "asked for"}, cwd=str(tmp_path))
    try:
        await session.start()
        assert session.launcher == FORK
        probe = "import os; print(os.environ.get('PTFUND_PROBE'), os.getcwd(), os.environ.get('MPLBACKEND'))"
        r = await session.execute(probe)
        assert r.output.split() == ["asked", "for", str(tmp_path), "module://matplotlib_inline.backend_inline"]
        # What reaches the descriptor itself is kept in the kernel's log (ipykernel also
        # shows it as output, except under pytest, where it leaves descriptors alone).
        await session.execute("import os; os.write(2, b'ptfund-log-probe\\n')")
        log_path = session._backend.log_path
        await until(lambda: "ptfund-log-probe" in log_path.read_text(), 5, "the output to reach the kernel's log")
    finally:
        await session.shutdown()


async def test_a_kernel_forked_from_an_older_library_is_sent_the_current_one(monkeypatch, tmp_path):
    """A forked kernel is told only the library's digest; one whose server loaded other
    sources (edited since the server started) says so and is sent the source."""
    from tutor.engine import inject

    (tmp_path / "__init__.py").write_text("EDITION = 'edited since the server started'\n")
    monkeypatch.setattr(inject, "_checks_dir", lambda: tmp_path)
    session = KernelSession()
    try:
        await session.start()
        assert session.launcher == FORK and session.checks_error is None
        r = await session.execute("import ptfund_checks; ptfund_checks.EDITION")
        assert r.result_text == repr("edited since the server started")
    finally:
        await session.shutdown()


async def test_a_request_the_kernel_cannot_meet_is_one_sentence(tmp_path):
    """A working directory that does not exist: the forked kernel says why it could not
    start, and the new process tried next fails the same way, in words."""
    session = KernelSession(cwd=str(tmp_path / "gone"))
    try:
        with pytest.raises(EngineError) as caught:
            await session.start()
        assert (
            str(caught.value)
            == f"The Python kernel could not be started: No such file or directory: {tmp_path / 'gone'}."
        )
    finally:
        await session.shutdown()


# A kernel that answers, then ends at once: its exit may reach the server before its answer.
ANSWER_THEN_EXIT = textwrap.dedent(
    """
    import os
    from tutor.engine import forkserver

    def answer_then_exit(sock, *_):
        forkserver._read_request(sock)
        forkserver._answer(sock, {"connection": {"shell_port": 1}})
        os._exit(7)

    forkserver._run_kernel = answer_then_exit
    forkserver.main()
    """
)


def test_a_kernel_that_ends_as_it_answers_is_reported_ended(monkeypatch):
    monkeypatch.setattr(forkclient, "SERVER_CODE", ANSWER_THEN_EXIT)
    server = forkclient.ForkServer(dict(os.environ))
    try:
        server.ready.result(timeout=120)
        for _ in range(5):
            kernel = server.spawn("unused.json", dict(os.environ), None, None).result(timeout=30)
            assert kernel.connection == {"shell_port": 1}
            assert server.wait_exit(kernel.pid, timeout=10) == 7
    finally:
        server.close()


async def test_a_server_that_never_becomes_ready_falls_back_to_new_processes(monkeypatch):
    forkclient.shutdown_shared()
    monkeypatch.setattr(forkclient, "SERVER_CODE", "import time; time.sleep(600)")  # alive, silent
    monkeypatch.setattr(forkclient, "READY_TIMEOUT", 2.0)
    session = KernelSession()
    try:
        await session.start()
        assert session.launcher == f"{SPAWN} (the fork server did not become ready within 2 s)"
        assert (await session.execute("1 + 1")).result_text == "2"
        server = forkclient.shared_server({})
        assert server.closed and server.proc is not None
        await until(lambda: server.proc.poll() is not None, what="the server stopped")  # given up on
    finally:
        await session.shutdown()
        forkclient.shutdown_shared()


def test_a_process_starts_its_fork_server_before_its_own_heavy_imports(tmp_path):
    # The warm server calls start_early() first thing, so that torch imports in the fork
    # server while the server imports jupyter_client: that must not import it already.
    script = textwrap.dedent(
        """
        import json, sys
        from tutor.engine import forkclient
        forkclient.start_early()
        early = sorted(m for m in ("jupyter_client", "zmq", "torch") if m in sys.modules)
        server = forkclient.shared_server({})
        server.ready.result(timeout=180)
        print(json.dumps({"early": early, "pid": server.pid}))
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "PTFUND_TUTOR_LAUNCHER"}
    env["PTFUND_TUTOR_HOME"] = str(tmp_path)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=240)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["early"] == []  # nothing heavy in the starting process
    assert isinstance(out["pid"], int)  # the same server the process's kernels fork from, ready


async def test_a_cold_check_s_kernels_start_before_torch_dynamo_and_later_ones_after():
    """The fork server's first kernels are forked before it imports torch._dynamo (a second
    of imports a cold check would wait for); what needs it imports it there; the server
    imports it once idle (or before forking more), so later kernels have it."""
    from tutor.checks.lazydynamo import _wrapper_code
    from tutor.engine.forkserver import LEAN_KERNELS

    if _wrapper_code() is None:
        pytest.skip("this torch's _disable_dynamo is not the wrapper lazydynamo knows: nothing is deferred")
    forkclient.shutdown_shared()
    probe = "import sys; 'torch._dynamo' in sys.modules"
    first = KernelSession()
    try:
        await first.start()
        assert first.launcher == FORK
        assert (await first.execute(probe)).result_text == "False"
        meta = await first.execute("import torch; tuple((torch.ones(2, 3, device='meta') * 2).sum(0).shape)")
        assert meta.result_text == "(3,)"
        assert (await first.execute(probe)).result_text == "False"  # a meta op needs no dynamo
        step = textwrap.dedent(
            """
            m = torch.nn.Linear(3, 2); opt = torch.optim.SGD(m.parameters(), lr=0.1)
            m(torch.ones(4, 3)).sum().backward(); w = m.weight.detach().clone(); opt.step()
            (not torch.equal(w, m.weight), 'torch._dynamo' in sys.modules)
            """
        )
        assert (await first.execute(step)).result_text == "(True, True)"
    finally:
        await first.shutdown()
    # However busy the machine, the kernel after the last lean one was forked with it.
    for _ in range(LEAN_KERNELS + 1):
        later = KernelSession()
        try:
            await later.start()
            if (await later.execute(probe)).result_text == "True":
                break
        finally:
            await later.shutdown()
    else:
        pytest.fail(f"no kernel forked with torch._dynamo after {LEAN_KERNELS + 1} more")
    forkclient.shutdown_shared()
