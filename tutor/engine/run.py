"""One execute request and what it amounts to: ``Run`` collects the messages the kernel
sends back for it (in order, as events for the caller), ``classify`` turns a finished run
into a RunResult with one sentence for the learner when it did not simply succeed.

Nothing here knows where the kernel runs (see backend.py) or how the session waits.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from tutor.engine import faults
from tutor.engine.events import WAITING_SHARE, DisplayEvent, ErrorEvent, OutputEvent, RunResult, StreamEvent
from tutor.engine.output import HEAD_LINES, MAX_MESSAGE_BYTES, TAIL_LINES, OutputBuffer, cap_bundle, strip_ansi
from tutor.engine.tracebacks import without_kernel_frames

log = logging.getLogger("tutor.engine")

CPU_SAMPLE = 0.25  # seconds between readings of a kernel's CPU time
PROGRESS_WINDOW = 5.0  # how far back "was it still computing, still printing" looks

OutputCallback = Callable[[OutputEvent], Any]
StdinCallback = Callable[[str], Awaitable[str | None] | str | None]


class KernelGone(Exception):
    """The kernel process ended: its exit status, or "gone" / "replaced" (see backend.py)."""

    def __init__(self, returncode: int | str | None):
        super().__init__(returncode)
        self.returncode = returncode


class Run:
    """One execute_request: collects what the kernel sends back for it."""

    def __init__(self, on_output: OutputCallback | None, stdin: StdinCallback | None, echo_input: bool = True):
        loop = asyncio.get_running_loop()
        self.on_output = on_output
        self.stdin = stdin
        self.echo_input = echo_input  # show prompt and answer as a terminal would (not for a program's relay)
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
        self.callbacks: set[asyncio.Future] = set()  # async on_output calls not yet done
        self.input_wait = 0.0  # seconds spent in the stdin callback
        self.extended = 0.0  # seconds of clock added to the run's limit since it began
        self.kernel_session: str | None = None  # the replying kernel's session id
        self._pending: list[StreamEvent] = []
        self.reply_time = 0.0
        self.last_iopub = 0.0
        self.last_output: float | None = None  # monotonic time of the last printed output
        self.refused = 0  # messages of this run refused for their size (connection.py)
        self.refused_from = 0  # the connection's count of refusals when the run began
        self._flush_scheduled = False
        # CPU time (session.execute's cpu_limit): the kernel's clock, the limit, samples.
        self.cpu_clock: Callable[[], float | None] | None = None
        self.cpu_limit: float | None = None
        self.cpu_used: float | None = None
        self._cpu_samples: list[tuple[float, float]] = []  # (monotonic, kernel CPU seconds)

    def sample_cpu(self) -> bool:
        """Read the kernel's CPU time (at most every CPU_SAMPLE s); True once the run has
        used its CPU limit, or has been waiting (using next to no CPU) for as long as the
        limit: a wait is no busy machine's fault."""
        if self.cpu_clock is None or self.cpu_limit is None:
            return False
        now = time.monotonic()
        samples = self._cpu_samples
        if samples and now - samples[-1][0] < CPU_SAMPLE:
            return False
        cpu = self.cpu_clock()
        if cpu is None:
            return False
        samples.append((now, cpu))
        while len(samples) > 2 and now - samples[1][0] > PROGRESS_WINDOW:
            samples.pop(1)  # the first sample stays: it is where the run's CPU time starts
        self.cpu_used = cpu - samples[0][1]
        if self.cpu_used >= self.cpu_limit:
            return True
        share = self.cpu_share()
        return now - samples[0][0] >= self.cpu_limit and share is not None and share < WAITING_SHARE

    def exclude_wait(self, seconds: float) -> None:
        """Leave ``seconds`` of waiting for input out of the run's clock: the samples taken
        before it move later by as much, so a share or a duration over them spans no wait."""
        self._cpu_samples = [(at + seconds, cpu) for at, cpu in self._cpu_samples]

    def cpu_share(self) -> float | None:
        """The cores' worth of CPU the kernel used over the last PROGRESS_WINDOW seconds."""
        samples = self._cpu_samples
        if len(samples) < 2:
            return None
        first = samples[1] if len(samples) > 2 else samples[0]
        last = samples[-1]
        return (last[1] - first[1]) / (last[0] - first[0]) if last[0] > first[0] else None

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
            ret = self.on_output(event)  # type: ignore[misc]
            if inspect.isawaitable(ret):
                # The run owns what its callback started: execute() waits for it.
                task = asyncio.ensure_future(ret)
                self.callbacks.add(task)
                task.add_done_callback(self._callback_done)
        except Exception:
            log.exception("on_output callback failed")

    def _callback_done(self, task: asyncio.Future) -> None:
        self.callbacks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("on_output callback failed", exc_info=task.exception())

    async def wait_callbacks(self) -> None:
        """Wait for the output callbacks this run started (they may still be drawing)."""
        while self.callbacks:
            await asyncio.wait(list(self.callbacks))

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
            self.last_output = time.monotonic()
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
            ename = content.get("ename", "Error")
            self.error = ErrorEvent(
                ename=ename,
                evalue=strip_ansi(content.get("evalue", "")),
                traceback=tuple(without_kernel_frames(lines, interrupted=ename == "KeyboardInterrupt")),
            )
            self.emit(self.error)
        elif kind == "execute_input":
            self.execution_count = content.get("execution_count", self.execution_count)
        elif kind == "status" and content.get("execution_state") == "idle":
            self.idle = True
        if self.reply is not None and self.idle and not self.done.done():
            self.done.set_result(None)


def classify(run: Run, elapsed: float, timeout: float | None, notice: str | None) -> RunResult:
    """What a finished run amounts to: its status and the one sentence for the learner."""
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
    if run.refused and status in ("ok", "error"):
        message = faults.output_refused(MAX_MESSAGE_BYTES)
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
        cpu_time=run.cpu_used,
        cpu_share=run.cpu_share() if status == "timeout" else None,
        quiet_for=None if run.last_output is None else time.monotonic() - run.last_output,
        refused=run.refused,
    )
