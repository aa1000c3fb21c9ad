"""A kernel session: start, run code with streamed output, interrupt, restart, shut down.

Owns one kernel: either a local ipykernel it launched (``TutorKernelManager``), or an
existing kernel reached through a connection file (``--kernel``), where there is no process
to signal or poll, so interrupts go over the control channel and liveness is the heartbeat.

Learner code is hostile by accident: it loops, crashes, exits, floods output. Whatever it
does, ``execute`` returns a RunResult, the session is usable afterwards, and a non-ordinary
outcome carries one sentence for the learner (see faults.py).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import signal
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from tutor.engine import faults
from tutor.engine.connection import Connection
from tutor.engine.device import (
    DEVICES,
    PID_EXPRESSION,
    REPORT_EXPRESSION,
    boot_source,
    device_info,
    parse_expression,
    parse_report,
)
from tutor.engine.errors import DeviceUnavailable, EngineError, KernelDied
from tutor.engine.events import (
    DeviceInfo,
    DisplayEvent,
    ErrorEvent,
    KernelState,
    OutputEvent,
    RunResult,
    StateEvent,
    StreamEvent,
)
from tutor.engine.output import HEAD_LINES, TAIL_LINES, OutputBuffer, cap_bundle, strip_ansi
from tutor.engine.tracebacks import without_kernel_frames

log = logging.getLogger("tutor.engine")

POLL_INTERVAL = 0.05  # how often a waiting run checks that the kernel process still lives
HEARTBEAT_INTERVAL = 1.0  # the same for an attached kernel, through its heartbeat
INTERRUPT_GRACE = 2.0  # an interrupt not obeyed within this long becomes a restart
STARTUP_TIMEOUT = 120.0  # a cold start imports torch; a slow disk can take a while
ATTACH_TIMEOUT = 30.0
IDENTITY_TIMEOUT = 10.0  # an attached kernel's control channel may be slow while it starts  # how long an attached kernel may take to answer or come back
IOPUB_SETTLE = 0.5  # after the boot reply, how long to wait for its IOPub idle
REQUEST_TIMEOUT = 2.0
IDLE_GRACE = 3.0  # after the reply, how long IOPub may stay silent before we stop waiting  # completion / inspection: the editor must not hang on them

OutputCallback = Callable[[OutputEvent], Any]
StdinCallback = Callable[[str], Awaitable[str | None] | str | None]


class _KernelGone(Exception):
    """The kernel process ended: its exit status, or "gone" / "replaced" (see _exit_status)."""

    def __init__(self, returncode: int | str | None):
        super().__init__(returncode)
        self.returncode = returncode


class _Run:
    """One execute_request: collects what the kernel sends back for it."""

    def __init__(self, on_output: OutputCallback | None, stdin: StdinCallback | None):
        loop = asyncio.get_running_loop()
        self.on_output = on_output
        self.stdin = stdin
        self.buffer = OutputBuffer()
        self.msg_id: str | None = None
        self.reply: dict | None = None
        self.idle = False
        self.done = loop.create_future()  # reply and IOPub idle both seen, or aborted
        self.closed = loop.create_future()  # execute() has returned (recovery included)
        self.error: ErrorEvent | None = None
        self.result_text: str | None = None
        self.execution_count: int | None = None
        self.outcome: tuple[str, str | None] | None = None  # forced (status, message)
        self.interrupt_at: float | None = None
        self.timed_out = False
        self.ask_exit = False
        self.input_tasks: set[asyncio.Task] = set()
        self.input_wait = 0.0  # seconds spent in the stdin callback
        self.kernel_session: str | None = None  # the replying kernel's session id
        self._pending: list[StreamEvent] = []
        self.reply_time = 0.0
        self.last_iopub = 0.0
        self._flush_scheduled = False

    def emit(self, event: OutputEvent) -> None:
        """Deliver an event; stream text is coalesced (one event per burst and stream) so a
        flood of tiny messages does not become a flood of UI updates."""
        if self.on_output is None:
            return
        if isinstance(event, StreamEvent):
            pending = self._pending
            if pending and pending[-1].name == event.name:
                pending[-1] = StreamEvent(event.name, pending[-1].text + event.text)
            else:
                pending.append(event)
            if not self._flush_scheduled:
                self._flush_scheduled = True
                asyncio.get_running_loop().call_soon(self.flush)
            return
        self.flush()
        self._deliver(event)

    def flush(self) -> None:
        self._flush_scheduled = False
        pending, self._pending = self._pending, []
        for event in pending:
            self._deliver(event)

    def _deliver(self, event: OutputEvent) -> None:
        try:
            ret = self.on_output(event)
            if inspect.isawaitable(ret):
                asyncio.ensure_future(ret)
        except Exception:
            log.exception("on_output callback failed")

    def abort(self, status: str, message: str | None) -> None:
        if self.outcome is None:
            self.outcome = (status, message)
        if not self.done.done():
            self.done.set_result(None)

    def handle(self, channel: str, msg: dict) -> None:
        kind = msg["header"]["msg_type"]
        content = msg.get("content") or {}
        if channel == "shell" and kind == "execute_reply":
            self.reply = content
            self.reply_time = time.monotonic()
            self.kernel_session = msg["header"].get("session")
            if content.get("execution_count") is not None:
                self.execution_count = content["execution_count"]
            for payload in content.get("payload") or ():
                if payload.get("source") == "ask_exit":
                    self.ask_exit = True
        elif channel != "iopub":
            return
        else:
            self.last_iopub = time.monotonic()
        if kind == "stream":
            for event in self.buffer.add_stream(content.get("name", "stdout"), content.get("text", "")):
                self.emit(event)
        elif kind in ("display_data", "execute_result", "update_display_data"):
            is_result = kind == "execute_result"
            event = DisplayEvent(cap_bundle(content.get("data") or {}), is_result=is_result)
            if is_result:
                self.result_text = event.data.get("text/plain")
                self.execution_count = content.get("execution_count", self.execution_count)
            if self.buffer.add_display(event):
                self.emit(event)
        elif kind == "error":
            lines: list[str] = []
            for entry in content.get("traceback") or ():
                lines.extend(strip_ansi(entry).rstrip("\n").split("\n"))
            self.error = ErrorEvent(
                ename=content.get("ename", "Error"),
                evalue=strip_ansi(content.get("evalue", "")),
                traceback=tuple(without_kernel_frames(lines)),
            )
            self.emit(self.error)
        elif kind == "execute_input":
            self.execution_count = content.get("execution_count", self.execution_count)
        elif kind == "status" and content.get("execution_state") == "idle":
            self.idle = True
        if self.reply is not None and self.idle and not self.done.done():
            self.done.set_result(None)


class KernelSession:
    """One kernel and the conversation with it. See the module docstring."""

    def __init__(
        self,
        device: str | None = None,
        connection_file: str | os.PathLike | None = None,
        cwd: str | os.PathLike | None = None,
        extra_env: dict[str, str] | None = None,
        *,
        interrupt_grace: float = INTERRUPT_GRACE,
        startup_timeout: float = STARTUP_TIMEOUT,
        preload_torch: bool = False,
        gateway: str | None = None,
        recover: bool = True,
    ):
        from tutor.engine.gateway import gateway_url

        if device is not None and device not in DEVICES:
            raise EngineError(f"Unknown device {device!r}; use one of: {', '.join(DEVICES)}.")
        self.device = device
        self.connection_file = str(connection_file) if connection_file else None
        # A Kernel Gateway's URL (also $PTFUND_TUTOR_GATEWAY); an attached kernel wins over it.
        self.gateway = None if self.connection_file else gateway_url(gateway)
        self.cwd = str(cwd) if cwd else None
        self.extra_env = dict(extra_env or {})
        self.interrupt_grace = interrupt_grace
        self.startup_timeout = startup_timeout
        self.preload_torch = preload_torch
        # False for a kernel that is thrown away after one run (a verification): after a
        # crash or an ignored interrupt it is left dead instead of restarted for nobody.
        self.recover = recover

        self.state: KernelState = "stopped"
        self.device_info: DeviceInfo | None = None
        self.on_state: Callable[[StateEvent], Any] | None = None
        self.report: dict = {}  # what the kernel said about itself at boot (pid, host, ...)
        self.startup_time: float | None = None  # seconds from start() to ready, last start
        self.checks_error: str | None = None  # why ptfund_checks failed to load, if it did

        self._km = None  # TutorKernelManager, when we own the kernel
        self._gw = None  # GatewayClient, when a gateway owns the kernel
        self._gw_kernel: str | None = None  # the kernel's id on the gateway
        self._conn: Connection | None = None
        self._log_file = None
        self._log_path: Path | None = None
        self._start_task: asyncio.Task | None = None
        self._life_lock = asyncio.Lock()  # start / restart / shutdown, one at a time
        self._run_lock = asyncio.Lock()  # one execute at a time
        self._run: _Run | None = None
        self._last_ping = 0.0
        # Every kernel process signs its messages with its own session id: an attached kernel
        # that answers with another id was restarted behind our back (a crash and a nanny).
        self._kernel_session: str | None = None

    # ------------------------------------------------------------------ public

    @property
    def attached(self) -> bool:
        return self.connection_file is not None

    @property
    def launcher(self) -> str | None:
        """How the current kernel was started: "fork server", or "new process" with the
        reason the fork server was not used; None when attached (see launch.py)."""
        return self._km.launcher if self._km is not None else None

    def start_soon(self) -> asyncio.Task:
        """Start in the background (idempotent); ``execute`` waits for it if needed."""
        task = self._start_task
        if task is None or (
            task.done() and (task.cancelled() or task.exception() is not None or self.state == "stopped")
        ):
            task = asyncio.get_running_loop().create_task(self._start(), name="ptfund-kernel-start")
            task.add_done_callback(_retrieve)
            self._start_task = task
        return task

    async def start(self) -> None:
        """Start the kernel and wait until it is ready (torch imported, checks injected)."""
        await asyncio.shield(self.start_soon())

    async def execute(
        self,
        code: str,
        on_output: OutputCallback | None = None,
        timeout: float | None = None,
        stdin: StdinCallback | None = None,
        silent: bool = False,
    ) -> RunResult:
        """Run ``code``; stream events to ``on_output`` as they arrive; never raises for
        anything the code does. ``stdin(prompt)`` answers input() (None cancels the run)."""
        async with self._run_lock:
            started = time.perf_counter()
            run = _Run(on_output, stdin)
            self._run = run  # interrupt() may come while the kernel is still starting
            notice = None
            try:
                notice = await self._ensure_ready()
                if notice:
                    run.emit(StateEvent("ready", notice))
                if run.outcome is None:
                    await self._execute(run, code, timeout, silent)
            finally:
                if self._run is run:
                    self._run = None
                if not run.closed.done():
                    run.closed.set_result(None)
                for task in run.input_tasks:
                    task.cancel()
            return self._result(run, time.perf_counter() - started, timeout, notice)

    async def interrupt(self) -> None:
        """Stop the running code: KeyboardInterrupt first; a restart if it is ignored.
        Returns when the interrupted run has ended."""
        run = self._run
        if run is None or run.done.done():
            return
        if run.msg_id is None:
            # Not sent yet (the kernel is starting): it will not be.
            run.abort("interrupted", faults.stopped_before_start())
        else:
            if run.interrupt_at is None:
                run.interrupt_at = asyncio.get_running_loop().time()
            await self._send_interrupt()
        await asyncio.shield(run.closed)

    async def restart(self) -> None:
        """A fresh kernel (same device); variables are gone. A running execute ends."""
        await self.start()
        run = self._run
        if run is not None:
            run.abort("interrupted", faults.restarted_during_run())
        async with self._life_lock:
            await self._restart_locked(None)
        if run is not None:
            await asyncio.shield(run.closed)

    async def shutdown(self) -> None:
        """Stop the kernel (an attached kernel is only disconnected) and free everything."""
        task = self._start_task
        if task is not None and not task.done():
            task.cancel()
            try:
                await task
            except BaseException:
                pass
        run = self._run
        if run is not None:
            run.abort("interrupted", faults.shut_down_during_run())
        async with self._life_lock:
            await self._teardown()
            self._set_state("stopped")

    async def notice_death(self) -> bool:
        """While idle, find out whether the kernel died since (killed from outside, say) and
        show it as ``dead`` with a sentence; the next run brings a new one. True if it died."""
        if self.state != "ready" or self._run_lock.locked() or self._life_lock.locked():
            return False
        status = await self._exit_status(force=True)
        if status is None or self.state != "ready" or self._run_lock.locked():
            return False
        self._set_state("dead", faults.died_while_idle(status))
        return True

    async def is_alive(self) -> bool:
        if self._conn is None or self.state in ("stopped", "dead"):
            return False
        return await self._exit_status(force=True) is None

    async def complete(self, code: str, cursor_pos: int | None = None) -> list[str]:
        """Completions at ``cursor_pos`` (default: end of code); [] while busy or on timeout."""
        reply = await self.complete_reply(code, cursor_pos)
        return list(reply.get("matches") or []) if reply else []

    async def complete_reply(self, code: str, cursor_pos: int | None = None) -> dict | None:
        """The full complete_reply (matches, cursor_start, cursor_end), or None."""
        pos = len(code) if cursor_pos is None else cursor_pos
        reply = await self._shell_request("complete_request", {"code": code, "cursor_pos": pos})
        return reply if reply and reply.get("status") == "ok" else None

    async def inspect(self, code: str, cursor_pos: int | None = None, detail_level: int = 0) -> str | None:
        """Help text for the name at ``cursor_pos`` (signature, docstring), or None."""
        pos = len(code) if cursor_pos is None else cursor_pos
        reply = await self._shell_request(
            "inspect_request", {"code": code, "cursor_pos": pos, "detail_level": detail_level}
        )
        if not reply or reply.get("status") != "ok" or not reply.get("found"):
            return None
        text = (reply.get("data") or {}).get("text/plain")
        return strip_ansi(text) if text else None

    # ------------------------------------------------------------------ state

    def _set_state(self, state: KernelState, message: str | None = None) -> None:
        if self.state == state and message is None:
            return
        self.state = state
        if self.on_state is not None:
            try:
                ret = self.on_state(StateEvent(state, message))
                if inspect.isawaitable(ret):
                    asyncio.ensure_future(ret)
            except Exception:
                log.exception("on_state callback failed")

    # ------------------------------------------------------------------ start

    async def _start(self) -> None:
        began = time.perf_counter()
        self._set_state("starting")
        try:
            async with self._life_lock:
                if self.attached:
                    await self._attach()
                elif self.gateway:
                    await self._open_gateway()
                else:
                    await self._launch()
                await self._boot()
        except BaseException:
            await self._teardown()
            self._set_state("stopped")
            raise
        self.startup_time = time.perf_counter() - began
        self._set_state("ready")

    async def _launch(self) -> None:
        from tutor.engine.launch import TutorKernelManager, kernel_env
        from tutor.engine.logs import log_file_path

        km = TutorKernelManager(preload_torch=self.preload_torch, fork=not self.preload_torch)
        self._km = km
        self._log_path = log_file_path(uuid.uuid4().hex)
        self._log_file = open(self._log_path, "ab")
        kwargs: dict[str, Any] = {
            "env": kernel_env(self.extra_env),
            "stdout": self._log_file,
            "stderr": self._log_file,
        }
        if self.cwd:
            kwargs["cwd"] = self.cwd
        await km.start_kernel(**kwargs)
        self._conn = Connection(km.client())
        self._conn.start()

    async def _open_gateway(self, kernel_id: str | None = None) -> None:
        """A kernel on the gateway (a new one unless ``kernel_id``) and its websocket."""
        from tutor.engine.gateway import ENV_KERNEL, GatewayClient, GatewayConnection

        if self._gw is None:
            self._gw = GatewayClient(self.gateway or "")
        if kernel_id is None:
            kernel_id = await self._gw.start_kernel(os.environ.get(ENV_KERNEL) or None)
        self._gw_kernel = kernel_id
        conn = GatewayConnection(self._gw, kernel_id)
        await conn.open()
        self._conn = conn  # type: ignore[assignment]

    async def _attach(self) -> None:
        path = Path(self.connection_file or "")
        try:
            conn = Connection.from_file(str(path))
        except (OSError, ValueError, KeyError) as exc:
            raise EngineError(f"Cannot read the kernel connection file {path}: {exc}.") from None
        conn.start()
        self._conn = conn
        deadline = asyncio.get_running_loop().time() + ATTACH_TIMEOUT
        while not await conn.ping(timeout=1.0):
            if asyncio.get_running_loop().time() > deadline:
                raise EngineError(f"No kernel answered at {path} within {ATTACH_TIMEOUT:g} s; is it running?")

    async def _boot(self) -> None:
        """Import torch, inject the checks, set DEVICE; read back what the kernel found."""
        run = _Run(None, None)
        content = {
            "code": boot_source(self.device),
            "silent": True,
            "store_history": False,
            "user_expressions": {"report": REPORT_EXPRESSION},
            "allow_stdin": False,
            "stop_on_error": False,
        }
        conn = self._require_conn()
        run.msg_id = conn.send("shell", "execute_request", content, run.handle)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.startup_timeout
        try:
            while run.reply is None:
                if loop.time() > deadline:
                    raise EngineError(f"The Python kernel did not become ready within {self.startup_timeout:g} s.")
                await self._wait_step(run.done, deadline)
                if run.reply is None and not run.done.done():
                    if await self._exit_status() is not None:
                        raise EngineError(self._start_failure())
            if not run.idle:
                await self._settle_iopub(run)
        except _KernelGone:
            raise EngineError(self._start_failure()) from None
        finally:
            conn.unregister(run.msg_id)
        report = parse_report(run.reply)
        if run.reply.get("status") != "ok" or not report:
            raise EngineError(
                "The Python kernel failed to run its start-up code: "
                f"{run.reply.get('ename', '')} {run.reply.get('evalue', '')}".rstrip()
                + "."
            )
        if report.get("error"):
            if self.device and "--device" in report["error"]:
                raise DeviceUnavailable(report["error"])
            raise EngineError(report["error"])
        self.report = report
        self._kernel_session = run.kernel_session
        self.device_info = device_info(report)
        self.checks_error = report.get("checks_error")
        if self.checks_error:
            log.warning("ptfund_checks did not load in the kernel: %s", self.checks_error)

    async def _settle_iopub(self, run: _Run) -> None:
        """Make sure IOPub is subscribed before the learner's first run (a SUB socket loses
        what is published before its subscription arrives): wait for the boot's idle, else
        probe with kernel_info until an IOPub message for a probe comes through."""
        try:
            await asyncio.wait_for(asyncio.shield(run.done), IOPUB_SETTLE)
            return
        except asyncio.TimeoutError:
            pass
        conn = self._require_conn()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + ATTACH_TIMEOUT
        while loop.time() < deadline:
            seen = loop.create_future()

            def on_msg(channel: str, msg: dict, seen=seen) -> None:
                if channel == "iopub" and not seen.done():
                    seen.set_result(None)

            msg_id = conn.send("shell", "kernel_info_request", {}, on_msg)
            try:
                await asyncio.wait_for(seen, IOPUB_SETTLE)
                return
            except asyncio.TimeoutError:
                if await self._exit_status() is not None:
                    raise _KernelGone(self._returncode()) from None
            finally:
                conn.unregister(msg_id)
        raise EngineError("The kernel's output channel (IOPub) never connected.")

    def _start_failure(self) -> str:
        tail = ""
        if self._log_path and self._log_path.exists():
            try:
                lines = self._log_path.read_text(errors="replace").strip().splitlines()
                errors = [l for l in lines if "Error" in l or "error" in l]
                tail = (errors or lines or [""])[-1].strip()
            except OSError:
                pass
        cause = faults.death_cause(self._returncode())
        return f"The Python kernel exited while starting ({cause})" + (f": {tail[:300]}" if tail else "") + "."

    # ------------------------------------------------------------------ liveness

    def _returncode(self) -> int | None:
        km = self._km
        process = getattr(getattr(km, "provisioner", None), "process", None)
        return None if process is None else process.returncode

    async def _exit_status(self, force: bool = False) -> int | str | None:
        """None while the kernel lives; else its exit status, "gone" when unknown, or
        "replaced" when an attached kernel is a new process."""
        if self._km is not None:
            provisioner = self._km.provisioner
            if provisioner is None or not provisioner.has_process:
                return "gone"
            return await provisioner.poll()
        conn = self._conn
        if conn is None:
            return "gone"
        lost = getattr(conn, "lost", None)  # what a gateway said about its kernel
        if lost:
            return "replaced" if lost == "restarting" else "gone"
        now = asyncio.get_running_loop().time()
        if not force and now - self._last_ping < HEARTBEAT_INTERVAL:
            return None
        self._last_ping = now
        # The control channel answers even while the shell runs code, and says who answers.
        # While it is silent, the heartbeat tells a slow kernel from a dead one.
        loop = asyncio.get_running_loop()
        got: asyncio.Future = loop.create_future()

        def on_reply(channel: str, msg: dict) -> None:
            if channel == "control" and not got.done():
                got.set_result(msg["header"].get("session"))

        # A request sent while the kernel was down can be lost with its connection: ask anew
        # each round, any answer will do.
        msg_ids: list[str] = []
        deadline = loop.time() + IDENTITY_TIMEOUT
        try:
            while True:
                msg_ids.append(conn.send("control", "kernel_info_request", {}, on_reply))
                try:
                    session = await asyncio.wait_for(asyncio.shield(got), HEARTBEAT_INTERVAL)
                    break
                except asyncio.TimeoutError:
                    pass
                # One missed beat can be a busy machine; two in a row is a dead kernel.
                if not await conn.ping(HEARTBEAT_INTERVAL) and not await conn.ping(HEARTBEAT_INTERVAL):
                    return "replaced" if getattr(conn, "lost", None) == "restarting" else "gone"
                if loop.time() > deadline:
                    return None  # beating but its control thread is stuck: treat as alive
        finally:
            for msg_id in msg_ids:
                conn.unregister(msg_id)
        known = self._kernel_session
        return None if known is None or session == known else "replaced"

    async def _wait_step(self, fut: asyncio.Future, deadline: float | None) -> None:
        """Wait for ``fut`` at most one poll interval (or until ``deadline``)."""
        loop = asyncio.get_running_loop()
        step = POLL_INTERVAL
        if deadline is not None:
            step = max(0.0, min(step, deadline - loop.time()))
        if not fut.done():
            await asyncio.wait([fut], timeout=step)

    async def _ensure_ready(self) -> str | None:
        """Start if needed; bring back a kernel that died since the last run. Returns the
        sentence to tell the learner when it had to be brought back."""
        await self.start()
        # Under the lock: a restart in progress must finish before we look at the process.
        async with self._life_lock:
            status = await self._exit_status(force=True)
            if status is None:
                return None
            notice = faults.died_between_runs(status)
            self._set_state("dead", notice)
            await self._restart_locked(notice, already_dead=True)
        return notice

    # ------------------------------------------------------------------ running

    def _require_conn(self) -> Connection:
        if self._conn is None:
            raise KernelDied("The Python kernel is not running.")
        return self._conn

    async def _execute(self, run: _Run, code: str, timeout: float | None, silent: bool) -> None:
        conn = self._require_conn()
        content = {
            "code": code,
            "silent": silent,
            "store_history": not silent,
            "user_expressions": {},
            "allow_stdin": run.stdin is not None,
            "stop_on_error": True,
        }

        def handle(channel: str, msg: dict) -> None:
            if channel == "stdin" and msg["header"]["msg_type"] == "input_request":
                task = asyncio.get_running_loop().create_task(self._answer_input(run, conn, msg))
                run.input_tasks.add(task)
                task.add_done_callback(run.input_tasks.discard)
            else:
                run.handle(channel, msg)

        self._set_state("busy")
        run.msg_id = conn.send("shell", "execute_request", content, handle)
        try:
            await self._wait_run(run, timeout)
        finally:
            conn.unregister(run.msg_id)
        for event in run.buffer.finish():
            run.emit(event)
        run.flush()
        if self.state == "busy":
            self._set_state("ready")

    async def _wait_run(self, run: _Run, timeout: float | None) -> None:
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        try:
            while not run.done.done():
                now = loop.time()
                if run.interrupt_at is not None and now >= run.interrupt_at + self.interrupt_grace:
                    # Interrupted and still busy (it swallows KeyboardInterrupt, or sits in
                    # C code that never checks for signals): only a new process stops it.
                    if run.timed_out:
                        run.abort("timeout", faults.timed_out_restarted(timeout or 0))
                    else:
                        run.abort("interrupted", faults.interrupt_escalated())
                    await self._recover(run, already_dead=False)
                    return
                if (
                    deadline is not None
                    and now >= deadline + run.input_wait
                    and run.interrupt_at is None
                    and not run.input_tasks
                ):
                    run.timed_out = True
                    run.interrupt_at = now
                    await self._send_interrupt()
                    continue
                if (
                    run.reply is not None
                    and not run.idle
                    and time.monotonic() - max(run.reply_time, run.last_iopub) > IDLE_GRACE
                ):
                    # The reply came but IOPub's idle never did (a publisher over its
                    # high-water mark drops messages): the run is over all the same.
                    log.warning("no IOPub idle for %s; ending the run on its reply", run.msg_id)
                    run.done.set_result(None)
                    break
                if run.interrupt_at is not None:
                    limit = run.interrupt_at + self.interrupt_grace
                elif deadline is not None and not run.input_tasks:
                    limit = deadline + run.input_wait
                else:
                    limit = None
                await self._wait_step(run.done, limit)
                if not run.done.done():
                    status = await self._exit_status()
                    if status is not None:
                        raise _KernelGone(status)
        except _KernelGone as gone:
            message = faults.crashed(gone.returncode)
            run.abort("crashed", message)
            self._set_state("dead", message)
            await self._recover(run, already_dead=True)

    async def _recover(self, run: _Run, already_dead: bool) -> None:
        """Restart after a crash or an ignored interrupt; the run keeps its sentence unless
        the kernel cannot be brought back, which then is the news."""
        message = run.outcome[1] if run.outcome else None
        if not self.recover:
            self._set_state("dead", message)
            return
        if message:
            run.emit(StateEvent("restarting", message))
        try:
            async with self._life_lock:
                await self._restart_locked(message, already_dead=already_dead)
        except EngineError as exc:
            run.outcome = (run.outcome[0] if run.outcome else "crashed", str(exc))

    async def _answer_input(self, run: _Run, conn: Connection, msg: dict) -> None:
        content = msg.get("content") or {}
        prompt = content.get("prompt", "")
        value: str | None
        asked = time.monotonic()
        try:
            ret = run.stdin(prompt) if run.stdin else None
            value = await ret if inspect.isawaitable(ret) else ret
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("stdin callback failed")
            value = None
        finally:
            # Time spent waiting for the learner to type does not count against the limit.
            run.input_wait += time.monotonic() - asked
        if run.done.done():
            return
        if value is None:
            # The learner declined to answer: stop the run as an interrupt would.
            if run.interrupt_at is None:
                run.interrupt_at = asyncio.get_running_loop().time()
            await self._send_interrupt()
            return
        value = str(value)
        # Show the exchange as a terminal would: the prompt, then what was typed.
        for event in run.buffer.add_stream("stdout", f"{prompt}{value}\n"):
            run.emit(event)
        conn.reply_input(value, msg["header"])

    async def _send_interrupt(self) -> None:
        try:
            if self._km is not None:
                if self._km.has_kernel:
                    await self._km.interrupt_kernel()
            elif self._gw is not None and self._gw_kernel:
                await self._gw.interrupt(self._gw_kernel)
            elif self._conn is not None:
                self._conn.send("control", "interrupt_request", {})
        except Exception:  # a kernel dying right now: the run's wait loop will notice
            log.debug("interrupt failed", exc_info=True)

    def _result(self, run: _Run, elapsed: float, timeout: float | None, notice: str | None) -> RunResult:
        buf = run.buffer
        reply = run.reply or {}
        message: str | None = None
        error = run.error
        if run.outcome is not None:
            status, message = run.outcome
        elif error is not None and error.ename == "KeyboardInterrupt":
            if run.timed_out:
                status, message = "timeout", faults.timed_out(timeout or 0)
            else:
                status, message = "interrupted", faults.interrupted()
        elif error is not None or reply.get("status") == "error":
            status = "error"
            if error is None:
                error = ErrorEvent(
                    reply.get("ename", "Error"),
                    strip_ansi(reply.get("evalue", "")),
                    tuple(without_kernel_frames(strip_ansi("\n".join(reply.get("traceback") or [])).split("\n"))),
                )
            message = faults.for_error(error.ename, error.evalue)
        elif reply.get("status") == "aborted":
            status, message = "error", "This run was skipped because the kernel aborted it."
        else:
            status = "ok"
            if run.ask_exit:
                message = faults.exit_ignored()
        if message is None and buf.omitted:
            message = faults.output_capped(buf.total_lines, HEAD_LINES, TAIL_LINES)
        if notice and (message is None or status == "ok"):
            message = notice
        return RunResult(
            status=status,  # type: ignore[arg-type]
            message=message,
            output=buf.text(),
            omitted_lines=buf.omitted,
            error=error,
            displays=list(buf.displays),
            result_text=run.result_text,
            execution_count=run.execution_count,
            elapsed=elapsed,
        )

    async def _shell_request(self, msg_type: str, content: dict) -> dict | None:
        if self.state != "ready" or self._conn is None:
            return None  # starting, or busy: the shell would answer only after the run
        conn = self._conn
        reply: asyncio.Future = asyncio.get_running_loop().create_future()

        def on_msg(channel: str, msg: dict) -> None:
            if channel == "shell" and not reply.done():
                reply.set_result(msg.get("content") or {})

        msg_id = conn.send("shell", msg_type, content, on_msg)
        try:
            return await asyncio.wait_for(reply, REQUEST_TIMEOUT)
        except asyncio.TimeoutError:
            return None
        finally:
            conn.unregister(msg_id)

    # ------------------------------------------------------------------ restart / teardown

    async def _restart_locked(self, message: str | None, already_dead: bool = False) -> None:
        """Replace the kernel with a fresh one and boot it. Caller holds _life_lock."""
        self._set_state("restarting", message)
        try:
            if self._km is not None:
                await self._restart_local()
            elif self._gw is not None:
                await self._restart_gateway(already_dead)
            else:
                await self._restart_attached(already_dead)
            await self._boot()
        except EngineError as exc:
            self._set_state("dead", str(exc))
            raise
        self._set_state("ready")

    async def _restart_local(self) -> None:
        if self._conn is not None:
            await self._conn.close()
            self._conn = None
        km = self._km
        # now=True: a kernel that ignores interrupts would also ignore a polite shutdown.
        await km.restart_kernel(now=True)
        self._conn = Connection(km.client())
        self._conn.start()

    async def _restart_gateway(self, already_dead: bool) -> None:
        """The gateway restarts the kernel (REST); one that died was already restarted by the
        gateway's own nanny, or is gone, and then a new kernel replaces it."""
        if self._conn is not None:
            await self._conn.close()
            self._conn = None
        self._kernel_session = None
        gw, kernel_id = self._gw, self._gw_kernel
        if kernel_id is not None and not already_dead:
            try:
                await gw.restart(kernel_id)
            except EngineError:
                log.debug("gateway restart failed; starting a new kernel", exc_info=True)
            else:
                await self._open_gateway(kernel_id)
                return
        model = await gw.kernel(kernel_id) if kernel_id else None
        if model is not None and model.get("execution_state") != "dead":
            await self._open_gateway(kernel_id)
            return
        if kernel_id:
            await gw.delete(kernel_id)
        self._gw_kernel = None
        await self._open_gateway()

    async def _restart_attached(self, already_dead: bool) -> None:
        """Ask the kernel to restart (shutdown_request with restart=True) and wait until a
        new process answers. Whatever manages that kernel (a Jupyter server, a nanny)
        brings it back; if it is local and ignores the request, it is killed."""
        conn = self._require_conn()
        old_pid = self.report.get("pid")
        self._kernel_session = None  # whoever answers next is the kernel we wait for
        local = self.report.get("host") == socket.gethostname()
        loop = asyncio.get_running_loop()
        if not already_dead:
            conn.send("control", "shutdown_request", {"restart": True})
            deadline = loop.time() + self.interrupt_grace
            while loop.time() < deadline and local and old_pid and _pid_alive(old_pid):
                await asyncio.sleep(POLL_INTERVAL)
            if local and old_pid and _pid_alive(old_pid):
                try:
                    os.kill(old_pid, signal.SIGKILL)
                except OSError:
                    pass
        await conn.close()
        self._conn = None
        conn = Connection.from_file(self.connection_file or "")
        conn.start()
        self._conn = conn
        deadline = loop.time() + ATTACH_TIMEOUT
        while True:
            if loop.time() > deadline:
                raise KernelDied(
                    "The kernel you attached to did not come back after a restart; "
                    "start it again and reattach with --kernel."
                )
            got: asyncio.Future = loop.create_future()

            def on_reply(channel: str, msg: dict, got=got) -> None:
                if channel == "shell" and not got.done():
                    got.set_result(msg)

            msg_id = conn.send(
                "shell",
                "execute_request",
                {
                    "code": "",
                    "silent": True,
                    "store_history": False,
                    "allow_stdin": False,
                    "user_expressions": {"pid": PID_EXPRESSION},
                },
                on_reply,
            )
            try:
                reply = await asyncio.wait_for(got, 1.0)
            except asyncio.TimeoutError:
                continue
            finally:
                conn.unregister(msg_id)
            pid = parse_expression(reply.get("content") or {}, "pid")
            if pid is not None and pid != old_pid:
                self._kernel_session = reply["header"].get("session")
                return

    async def _teardown(self) -> None:
        if self._conn is not None:
            await self._conn.close()
            self._conn = None
        gw, kernel_id, self._gw_kernel = self._gw, self._gw_kernel, None
        if gw is not None and kernel_id is not None:
            try:
                await gw.delete(kernel_id)
            except EngineError:
                log.debug("gateway kernel delete failed", exc_info=True)
        km, self._km = self._km, None
        if km is not None:
            try:
                await km.shutdown_kernel(now=True)
            except Exception:
                log.debug("kernel shutdown failed", exc_info=True)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        if self._log_path is not None:
            try:
                self._log_path.unlink()
            except OSError:
                pass
            self._log_path = None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _retrieve(task: asyncio.Task) -> None:
    """Mark a background start's failure as seen; whoever awaits the start gets it raised."""
    if not task.cancelled():
        exc = task.exception()
        if exc is not None:
            log.debug("kernel start failed: %s", exc)
