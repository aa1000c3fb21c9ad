"""A kernel session: start, run code with streamed output, interrupt, restart, shut down.

The session is the conversation with one kernel: the boot code, runs and their time limits,
interrupts that escalate to restarts, recovery after a crash. Where the kernel runs (a local
process, an attached kernel, a gateway's) is its backend's business (backend.py); what the
kernel sends back for a run is collected and classified in run.py.

Learner code is hostile by accident: it loops, crashes, exits, floods output. Whatever it
does, ``execute`` returns a RunResult, the session is usable afterwards, and a non-ordinary
outcome carries one sentence for the learner (see faults.py).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import time
from collections.abc import Callable
from typing import Any

from tutor.engine import faults
from tutor.engine.backend import KernelBackend
from tutor.engine.confine import LEARNER, Confinement
from tutor.engine.connection import Connection
from tutor.engine.device import DEVICES, REPORT_EXPRESSION, boot_source, checks_source, device_info, parse_report
from tutor.engine.errors import DeviceUnavailable, EngineError, KernelDied
from tutor.engine.events import DeviceInfo, KernelState, RunResult, StateEvent
from tutor.engine.output import strip_ansi
from tutor.engine.run import KernelGone, OutputCallback, Run, StdinCallback, classify

log = logging.getLogger("tutor.engine")

POLL_INTERVAL = 0.05  # how often a waiting run checks that the kernel process still lives
INTERRUPT_GRACE = 2.0  # an interrupt not obeyed within this long becomes a restart
STARTUP_TIMEOUT = 120.0  # a cold start imports torch; a slow disk can take a while
PORT_ATTEMPTS = 3  # a local start whose ports another process took in the meantime is tried again
IOPUB_CONNECT_TIMEOUT = 30.0  # how long IOPub may take to connect after the boot reply
IOPUB_SETTLE = 0.5  # after the boot reply, how long to wait for its IOPub idle
REQUEST_TIMEOUT = 2.0  # completion / inspection: the editor must not hang on them
IDLE_GRACE = 3.0  # after the reply, how long IOPub may stay silent before we stop waiting

__all__ = ["KernelSession", "OutputCallback", "StdinCallback"]


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
        threads: int | None = None,
        confinement: Confinement | None = LEARNER,
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
        # torch's intra-op threads in a kernel started here (None: torch's default); a kernel
        # attached to or on a gateway runs on another machine's cores and keeps its default.
        self.threads = threads
        # What a kernel started here may touch (confine.py): by default a learner's
        # confinement; None for none. Attached and gateway kernels are not the tutor's to confine.
        self.confinement = confinement

        self.state: KernelState = "stopped"
        self.device_info: DeviceInfo | None = None
        self.on_state: Callable[[StateEvent], Any] | None = None
        self.report: dict = {}  # what the kernel said about itself at boot (pid, host, ...)
        self.startup_time: float | None = None  # seconds from start() to ready, last start
        self.checks_error: str | None = None  # why ptfund_checks failed to load, if it did

        self._backend: KernelBackend | None = None  # where the kernel runs, once started
        self._conn: Connection | None = None
        self._callbacks: set[asyncio.Future] = set()  # async on_state calls not yet done
        self._start_task: asyncio.Task | None = None
        self._teardown_task: asyncio.Task | None = None
        self._life_lock = asyncio.Lock()  # start / restart / shutdown, one at a time
        self._run_lock = asyncio.Lock()  # one execute at a time
        self._run: Run | None = None

    # ------------------------------------------------------------------ public

    @property
    def attached(self) -> bool:
        return self.connection_file is not None

    @property
    def launcher(self) -> str | None:
        """How the current kernel was started: "fork server", or "new process" with the
        reason the fork server was not used; None when attached (see launch.py)."""
        return self._backend.launcher if self._backend is not None else None

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
        cpu_limit: float | None = None,
        echo_input: bool = True,
    ) -> RunResult:
        """Run ``code``; stream events to ``on_output`` as they arrive; never raises for
        anything the code does. ``stdin(prompt)`` answers input() (None cancels the run);
        ``echo_input=False`` keeps prompts and answers out of the output (a program's relay).

        ``cpu_limit``: seconds of the kernel's CPU time the run may use; ``timeout`` is
        then the wall-clock ceiling above it. Where the kernel's CPU time cannot be read
        (attached, on a gateway, not Linux) ``cpu_limit`` is a wall-clock limit."""
        async with self._run_lock:
            started = time.perf_counter()
            run = Run(on_output, stdin, echo_input)
            self._run = run  # interrupt() may come while the kernel is still starting
            notice = None
            try:
                notice = await self._ensure_ready()
                if notice:
                    run.emit(StateEvent("ready", notice))
                conn = self._conn
                refused = run.refused_from = conn.refused if conn is not None else 0
                if run.outcome is None:
                    clock = self._cpu_clock() if cpu_limit is not None else None
                    if cpu_limit is not None and clock is None:
                        timeout = cpu_limit if timeout is None else min(timeout, cpu_limit)
                    run.cpu_clock, run.cpu_limit = clock, cpu_limit if clock is not None else None
                    await self._execute(run, code, timeout, silent)
                if conn is not None and conn is self._conn:
                    run.refused = conn.refused - refused
            finally:
                if self._run is run:
                    self._run = None
                if not run.closed.done():
                    run.closed.set_result(None)
                for task in run.input_tasks:
                    task.cancel()
            await run.wait_callbacks()
            return classify(run, time.perf_counter() - started, run.cpu_limit or timeout, notice)

    def extend_limit(self, seconds: float) -> None:
        """Give the running execute ``seconds`` more (of CPU time, or of the clock where its
        limit is the clock's): a relay's cell whose first part had the learner's limit."""
        run = self._run
        if run is None:
            return
        if run.cpu_limit is not None:
            run.cpu_limit += seconds
        else:
            run.extended += seconds

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
            # Wait for the start to unwind, without taking its exception (or its
            # cancellation) for ours: a cancelled caller is still cancelled.
            await asyncio.wait([task])
        run = self._run
        if run is not None:
            run.abort("interrupted", faults.shut_down_during_run())
        async with self._life_lock:
            await asyncio.shield(self._teardown_soon())
            self._set_state("stopped")
        while self._callbacks:  # what on_state started, e.g. the UI showing "stopped"
            await asyncio.wait(list(self._callbacks))

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
                    # The session owns what its callback started: shutdown() waits for it.
                    task = asyncio.ensure_future(ret)
                    self._callbacks.add(task)
                    task.add_done_callback(self._callback_done)
            except Exception:
                log.exception("on_state callback failed")

    def _callback_done(self, task: asyncio.Future) -> None:
        self._callbacks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("on_state callback failed", exc_info=task.exception())

    # ------------------------------------------------------------------ start

    async def _start(self) -> None:
        began = time.perf_counter()
        self._set_state("starting")
        try:
            async with self._life_lock:
                for attempt in range(1, PORT_ATTEMPTS + 1):
                    self._backend = self._new_backend()
                    try:
                        self._conn = await self._backend.open()
                        await self._boot()
                        break
                    except EngineError as exc:
                        # A local kernel binds ports picked a moment earlier; another process
                        # may take one in between. New ports are the cure, not an error.
                        if attempt == PORT_ATTEMPTS or not _port_taken(exc, self._backend):
                            raise
                        log.info("kernel ports taken by another process; starting again (%s)", exc)
                        await self._teardown()
        except BaseException:
            await asyncio.shield(self._teardown_soon())
            self._set_state("stopped")
            raise
        self.startup_time = time.perf_counter() - began
        self._set_state("ready")

    @property
    def backend_name(self) -> str:
        """Where this session's kernel runs, by its name in backends.BACKENDS."""
        from tutor.engine.backends import backend_name

        return backend_name(self)

    def _new_backend(self) -> KernelBackend:
        from tutor.engine.backends import make_backend

        return make_backend(self.backend_name, self)

    async def _boot(self) -> None:
        """Import torch, inject the checks, set DEVICE; read back what the kernel found."""
        from tutor.engine.launch import FORK

        forked = self.launcher == FORK  # has the check library already, from the fork server
        threads = self.threads if self.launcher is not None and not self.gateway else None
        reply = await self._boot_cell(boot_source(self.device, checks_installed=forked, threads=threads))
        if parse_report(reply).get("checks_missing"):  # the server's library is older
            reply = await self._boot_cell(checks_source())
        self._boot_report(reply)

    async def _boot_cell(self, code: str) -> dict:
        """Run a boot cell; its execute_reply, with the boot report in its user_expressions."""
        run = Run(None, None)
        content = {
            "code": code,
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
                if run.reply is None and not run.done.done() and await self._exit_status() is not None:
                    raise EngineError(self._require_backend().start_failure())
            if not run.idle:
                await self._settle_iopub(run)
        except KernelGone:
            raise EngineError(self._require_backend().start_failure()) from None
        finally:
            conn.unregister(run.msg_id)
        self._require_backend().kernel_session = run.kernel_session
        return run.reply

    def _boot_report(self, reply: dict) -> None:
        report = parse_report(reply)
        if reply.get("status") != "ok" or not report:
            raise EngineError(
                "The Python kernel failed to run its start-up code: "
                f"{reply.get('ename', '')} {reply.get('evalue', '')}".rstrip()
                + "."
            )
        if report.get("error"):
            if self.device and "--device" in report["error"]:
                raise DeviceUnavailable(report["error"])
            raise EngineError(report["error"])
        self.report = report
        self.device_info = device_info(report)
        self.checks_error = report.get("checks_error")
        if self.checks_error:
            log.warning("ptfund_checks did not load in the kernel: %s", self.checks_error)

    async def _settle_iopub(self, run: Run) -> None:
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
        deadline = loop.time() + IOPUB_CONNECT_TIMEOUT
        while loop.time() < deadline:
            seen = loop.create_future()

            def on_msg(channel: str, msg: dict, seen: asyncio.Future = seen) -> None:
                if channel == "iopub" and not seen.done():
                    seen.set_result(None)

            msg_id = conn.send("shell", "kernel_info_request", {}, on_msg)
            try:
                await asyncio.wait_for(seen, IOPUB_SETTLE)
                return
            except asyncio.TimeoutError:
                if await self._exit_status() is not None:
                    raise KernelGone(self._require_backend().returncode()) from None
            finally:
                conn.unregister(msg_id)
        raise EngineError("The kernel's output channel (IOPub) never connected.")

    def _cpu_clock(self) -> Callable[[], float | None] | None:
        """The kernel's CPU seconds, for a kernel on this machine whose pid we know."""
        import socket

        from tutor.engine.cputime import process_cpu_seconds
        from tutor.engine.local import LocalBackend

        pid = self.report.get("pid")
        if not isinstance(self._backend, LocalBackend) or not isinstance(pid, int):
            return None
        if self.report.get("host") != socket.gethostname() or process_cpu_seconds(pid) is None:
            return None
        return lambda: process_cpu_seconds(pid)

    # ------------------------------------------------------------------ liveness

    def _require_backend(self) -> KernelBackend:
        if self._backend is None:
            raise KernelDied("The Python kernel is not running.")
        return self._backend

    async def _exit_status(self, force: bool = False) -> int | str | None:
        """None while the kernel lives; else how it ended (see backend.KernelBackend)."""
        if self._backend is None or self._conn is None:
            return "gone"
        return await self._backend.exit_status(self._conn, force)

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

    async def _execute(self, run: Run, code: str, timeout: float | None, silent: bool) -> None:
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

    async def _wait_run(self, run: Run, timeout: float | None) -> None:
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        try:
            while not run.done.done():
                now = loop.time()
                if run.interrupt_at is not None and now >= run.interrupt_at + self.interrupt_grace:
                    # Interrupted and still busy (it swallows KeyboardInterrupt, or sits in
                    # C code that never checks for signals): only a new process stops it.
                    if run.timed_out:
                        run.abort("timeout", faults.timed_out_restarted(run.cpu_limit or timeout or 0))
                    else:
                        run.abort("interrupted", faults.interrupt_escalated())
                    await self._recover(run, already_dead=False)
                    return
                if (
                    run.interrupt_at is None
                    and not run.input_tasks
                    and ((deadline is not None and now >= deadline + run.input_wait + run.extended) or run.sample_cpu())
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
                    # After a message refused for its size, the reconnection lost it: expected.
                    lost = self._conn is not None and self._conn.refused > run.refused_from
                    log.log(
                        logging.DEBUG if lost else logging.WARNING,
                        "no IOPub idle for %s; ending the run on its reply",
                        run.msg_id,
                    )
                    run.done.set_result(None)
                    break
                if run.interrupt_at is not None:
                    limit = run.interrupt_at + self.interrupt_grace
                elif deadline is not None and not run.input_tasks:
                    limit = deadline + run.input_wait + run.extended
                else:
                    limit = None
                await self._wait_step(run.done, limit)
                if not run.done.done():
                    status = await self._exit_status()
                    if status is not None:
                        raise KernelGone(status)
        except KernelGone as gone:
            wire = self._backend.wire_fault() if self._backend is not None else None
            message = faults.crashed(gone.returncode, wire=wire, restarted=self.recover)
            run.abort("crashed", message)
            self._set_state("dead", message)
            await self._recover(run, already_dead=True)

    async def _recover(self, run: Run, already_dead: bool) -> None:
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

    async def _answer_input(self, run: Run, conn: Connection, msg: dict) -> None:
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
            waited = time.monotonic() - asked
            run.input_wait += waited
            run.exclude_wait(waited)
        if run.done.done():
            return
        if value is None:
            # The learner declined to answer: stop the run as an interrupt would.
            if run.interrupt_at is None:
                run.interrupt_at = asyncio.get_running_loop().time()
            await self._send_interrupt()
            return
        value = str(value)
        if run.echo_input:
            # Show the exchange as a terminal would: the prompt, then what was typed.
            for event in run.buffer.add_stream("stdout", f"{prompt}{value}\n"):
                run.emit(event)
        conn.reply_input(value, msg["header"])

    async def _send_interrupt(self) -> None:
        try:
            if self._backend is not None and self._conn is not None:
                await self._backend.interrupt(self._conn)
        except Exception:  # a kernel dying right now: the run's wait loop will notice
            log.debug("interrupt failed", exc_info=True)

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
            backend, conn = self._require_backend(), self._require_conn()
            self._conn = None  # the backend closes it
            self._conn = await backend.restart(conn, already_dead, self.report)
            await self._boot()
        except EngineError as exc:
            self._set_state("dead", str(exc))
            raise
        self._set_state("ready")

    def _teardown_soon(self) -> asyncio.Task:
        """The teardown in progress, or a new one. A teardown cut short (its caller
        cancelled) would leave sockets open, so it runs as a task of its own that every
        caller waits for, shielded."""
        task = self._teardown_task
        if task is None or task.done():
            task = asyncio.get_running_loop().create_task(self._teardown(), name="ptfund-kernel-teardown")
            task.add_done_callback(_retrieve)
            self._teardown_task = task
        return task

    async def _teardown(self) -> None:
        if self._conn is not None:
            await self._conn.close()
            self._conn = None
        if self._backend is not None:
            await self._backend.close()


def _port_taken(exc: EngineError, backend: KernelBackend | None) -> bool:
    from tutor.engine.local import LocalBackend

    return isinstance(backend, LocalBackend) and "Address already in use" in str(exc)


def _retrieve(task: asyncio.Task) -> None:
    """Mark a background task's failure as seen; whoever awaits the task gets it raised."""
    if not task.cancelled():
        exc = task.exception()
        if exc is not None:
            log.debug("%s failed: %s", task.get_name(), exc)
