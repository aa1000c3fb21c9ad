"""The tutor's side of the fork server (forkserver.py): start it, ask it for kernels, learn
how they ended.

One server per tutor process, started on first use and shared by every event loop in it
(the app's, or one ``asyncio.run`` after another in tests and commands): requests and
replies go through a plain socket and one reader thread, and callers wait on
``concurrent.futures`` futures. A kernel forked by the server is not the tutor's child, so
its exit status comes from the server; ``ForkedProcess`` offers what jupyter_client's
LocalProvisioner expects of a ``subprocess.Popen``.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Any, NamedTuple

READY_TIMEOUT = 120.0  # the server imports torch and ipykernel: as slow as a cold kernel
# The collector waits until the server has loaded everything (forkserver.warm).
SERVER_CODE = "import gc; gc.disable(); from tutor.engine.forkserver import main; main()"


class ForkServerUnavailable(Exception):
    """The fork server cannot be used; the sentence says why (doctor shows it)."""


class ForkedKernel(NamedTuple):
    """A kernel the server handed out: its pid, and the connection it listens on (the
    fields of a connection file; the kernel chose its own ports and key)."""

    pid: int
    connection: dict[str, Any]
    scratch: str | None = None  # its scratch directory, when confined (the server removes it)
    confinement: dict[str, Any] | None = None  # what confine.enter reported


class ForkServer:
    """A running fork server. Use ``shared()``; ``spawn`` hands out one kernel."""

    def __init__(self, env: dict[str, str], log_path: str | None = None):
        self._env = env
        self._log_path = log_path
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._pending: dict[int, concurrent.futures.Future] = {}
        self._exits: dict[int, int] = {}
        self._waiters: dict[int, list[concurrent.futures.Future]] = {}
        self._exit_cond = threading.Condition(self._lock)
        self.ready: concurrent.futures.Future = concurrent.futures.Future()
        self.pid: int | None = None
        self.proc: subprocess.Popen | None = None
        self.sock: socket.socket | None = None
        self.closed = False
        self._thread = threading.Thread(target=self._run, name="ptfund-forkserver", daemon=True)
        self._thread.start()

    # ---- lifecycle

    def _run(self) -> None:
        try:
            ours, theirs = socket.socketpair()
            with theirs, open(self._log_path or os.devnull, "ab") as out:
                self.proc = subprocess.Popen(
                    [sys.executable, "-c", SERVER_CODE, str(theirs.fileno())],
                    pass_fds=(theirs.fileno(),),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=out,
                    env=self._env,
                    start_new_session=True,  # a terminal's Ctrl-C is for the tutor
                )
            self.sock = ours
        except OSError as exc:
            self.ready.set_exception(ForkServerUnavailable(f"the fork server could not start ({exc})"))
            return
        buffer = b""
        while True:
            try:
                data = ours.recv(1 << 16)
            except OSError:
                data = b""
            if not data:
                break
            buffer += data
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                self._handle(json.loads(line))
        self._gone()

    def _handle(self, msg: dict) -> None:
        if "ready" in msg:
            with self._lock:  # a server given up on (wait_ready) stays given up on
                if self.ready.done():
                    return
                if msg["ready"]:
                    self.pid = msg.get("pid")
                    self.ready.set_result(True)
                else:
                    self.ready.set_exception(ForkServerUnavailable(msg.get("error") or "the fork server failed"))
        elif "exit" in msg:
            with self._exit_cond:
                self._exits[msg["exit"]] = msg["status"]
                waiters = self._waiters.pop(msg["exit"], [])
                self._exit_cond.notify_all()
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(msg["status"])
        elif "id" in msg:
            with self._lock:
                fut = self._pending.pop(msg["id"], None)
            if fut is None:
                return
            if fut.done():  # cancelled by its waiter (launch.py kills what it forked)
                return
            if "pid" in msg:
                fut.set_result(
                    ForkedKernel(msg["pid"], msg.get("connection") or {}, msg.get("scratch"), msg.get("confinement"))
                )
            else:
                fut.set_exception(ForkServerUnavailable(msg.get("error") or "the fork server failed"))

    def _gone(self) -> None:
        """The server ended: every kernel it forked died with it (their death signal)."""
        self.closed = True
        if not self.ready.done():
            code = self.proc.wait() if self.proc else None
            with self._lock:
                if not self.ready.done():
                    self.ready.set_exception(
                        ForkServerUnavailable(f"the fork server exited while warming up (status {code})")
                    )
        with self._exit_cond:
            pending, self._pending = self._pending, {}
            waiters, self._waiters = self._waiters, {}
            self._exit_cond.notify_all()
        for fut in pending.values():
            if not fut.done():
                fut.set_exception(ForkServerUnavailable("the fork server stopped"))
        for futs in waiters.values():
            for fut in futs:
                if not fut.done():
                    fut.set_result(-signal.SIGKILL)

    async def wait_ready(self) -> None:
        """Wait until the server can fork kernels. A server silent for ``READY_TIMEOUT``
        is given up on (stopped, and this and every later wait fail at once), so a kernel
        start falls back to a new process instead of waiting forever."""
        import asyncio  # not at the top: a process starts its fork server before it imports asyncio

        waiting = asyncio.wrap_future(self.ready)  # never cancelled: the future is shared
        done, _ = await asyncio.wait([waiting], timeout=READY_TIMEOUT)
        if not done:
            self._give_up(f"the fork server did not become ready within {READY_TIMEOUT:g} s")
        await asyncio.shield(waiting)  # (it may have become ready at the last moment)

    def _give_up(self, sentence: str) -> None:
        with self._lock:
            if not self.ready.done():
                self.ready.set_exception(ForkServerUnavailable(sentence))
        self.closed = True
        proc = self.proc
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the server leads its own session
            except OSError:
                pass
        self.close()

    def close(self) -> None:
        """Stop the server; it kills the kernels it forked."""
        if self.sock is not None:
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        proc = self.proc
        if proc is not None and proc.poll() is None:
            try:
                proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    # ---- kernels

    def spawn(
        self,
        connection_file: str,
        env: dict[str, str],
        cwd: str | None,
        log: str | None,
        confine: dict[str, Any] | None = None,
    ) -> concurrent.futures.Future:
        """A kernel for ``connection_file`` (the tutor writes it), confined by the policy
        ``confine`` (confine.Confinement as JSON) if given; the future holds a
        ``ForkedKernel``."""
        fut: concurrent.futures.Future = concurrent.futures.Future()
        if self.closed or self.sock is None:
            fut.set_exception(ForkServerUnavailable("the fork server stopped"))
            return fut
        request: dict[str, object] = {"connection_file": connection_file, "env": env, "cwd": cwd, "log": log}
        request["confine"] = confine
        with self._lock:
            request["id"] = ident = next(self._ids)
            self._pending[ident] = fut
            try:
                self.sock.sendall(json.dumps(request).encode() + b"\n")
            except OSError as exc:
                self._pending.pop(ident, None)
                fut.set_exception(ForkServerUnavailable(f"the fork server stopped ({exc})"))
        return fut

    def exit_status(self, pid: int) -> int | None:
        """How a forked kernel ended (as Popen.returncode), or None while it runs."""
        status = self._exits.get(pid)
        if status is None and self.closed:
            return -signal.SIGKILL  # killed with the server
        return status

    def wait_exit(self, pid: int, timeout: float | None = None) -> int | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._exit_cond:
            while self.exit_status(pid) is None:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return None
                self._exit_cond.wait(left)
            return self.exit_status(pid)

    def exited(self, pid: int) -> concurrent.futures.Future:
        """A future that holds the kernel's exit status once it has ended."""
        fut: concurrent.futures.Future = concurrent.futures.Future()
        with self._exit_cond:
            status = self.exit_status(pid)
            if status is None:
                self._waiters.setdefault(pid, []).append(fut)
                return fut
        fut.set_result(status)
        return fut

    def forget(self, pid: int) -> None:
        self._exits.pop(pid, None)


class ForkedProcess:
    """A forked kernel as jupyter_client's LocalProvisioner sees a ``subprocess.Popen``.
    Signals go straight to the kernel (it is the tutor's own user's process)."""

    stdin = stdout = stderr = None

    def __init__(self, server: ForkServer, pid: int):
        self.server = server
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.server.exit_status(self.pid)
            if self.returncode is not None:
                self.server.forget(self.pid)  # the status lives here from now on
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.poll() is None:
            status = self.server.wait_exit(self.pid, timeout)
            if status is None:
                raise subprocess.TimeoutExpired(["kernel", str(self.pid)], timeout or 0)
            self.poll()
        return self.returncode  # type: ignore[return-value]

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:  # a reaped pid may already belong to someone else
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


# ---- the process's one server

_shared: ForkServer | None = None
_shared_lock = threading.Lock()


def shared_server(env: dict[str, str]) -> ForkServer:
    """This process's fork server, started on first use (and again if it died)."""
    global _shared
    with _shared_lock:
        # A server that died after serving is started again; one that could not warm up
        # is not (it would fail the same way, a cold start each time).
        server = _shared
        if server is not None and server.proc is not None and server.proc.poll() is not None:
            server.closed = True  # it died; its reader thread may not have seen EOF yet
        if server is None or (server.closed and server.ready.done() and server.ready.exception() is None):
            from tutor.engine.logs import log_file_path

            _shared = server = ForkServer(env, str(log_file_path(f"forkserver-{os.getpid()}")))
        return server


def start_early() -> None:
    """Start this process's fork server now, where this process will fork kernels later.
    The server imports torch (seconds): a process that knows it will need kernels calls this
    before its own imports (jupyter_client and the rest), so the two overlap."""
    from tutor.engine.kernelenv import fork_refusal, kernel_env

    if fork_refusal() is None:
        shared_server(kernel_env())


def shutdown_shared() -> None:
    global _shared
    with _shared_lock:
        server, _shared = _shared, None
    if server is not None:
        server.close()


atexit.register(shutdown_shared)
