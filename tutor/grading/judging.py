"""A verification in two kernels: the learner's runs the code, the judge decides.

The host takes two fresh kernels. The learner's kernel gets the exercise's setup, the
learner's code, the seed and the device, nothing else (tutor/checks/learner.py). The judge's
kernel gets everything that decides the verdict: setup, reference solution, checks,
mistakes (tutor/checks/judge.py). While the judge runs the reference, the learner's kernel
runs setup and the code; then the judge's questions about the learner's values or code go
to the learner's kernel, and its answers (data, wire.py) come back, one of two ways:

- over the pipe (pipe.py; the default where both kernels run on this machine): each kernel
  listens on 127.0.0.1, and once the learner's code has run (its kernel says so in one
  ``input()`` prompt, naming its port) the host connects to both and copies bytes between
  them. The judge asks the host itself only why the pipe ended, whether a slow answer is
  still coming, or to say that what came is no answer;
- relayed: every question is an ``input()`` prompt of the judge, relayed to the learner's
  kernel as the reply to that kernel's own pending prompt, whose next prompt is the answer.

Either way the host never decodes what it carries: it imports no torch.

What can end the learner's side early (a time-out, a crash, ``os._exit``) is told to the
judge as a fault, which ends its checks; the verdict then says what happened to the code.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import time
from typing import TYPE_CHECKING

from tutor.checks.pipe import split_header
from tutor.engine.events import RunResult
from tutor.grading.pipe import Pipe, connect_end
from tutor.grading.timeouts import cpu_limits, threads_cell, timeout_sentence
from tutor.grading.verdict import Verdict
from tutor.packs import models as m

if TYPE_CHECKING:
    from collections.abc import Callable

    from tutor.engine.session import KernelSession, OutputCallback

ANSWER_PROMPT = "ptfund-learner:"  # the learner's kernel answering the judge (tutor/checks/learner.py)
RESULT_MIME = "application/vnd.ptfund.verdict+json"  # the judge's result
OLD_RESULT_MIME = "application/vnd.ptfund+json"  # the single-kernel path's (tutor/checks/report.py)
PROMPT = "ptfund-judge:"
NO_PIPE_ENV = "PTFUND_TUTOR_NO_PIPE"  # set: relay every request as a prompt (how the pipe is measured)
# Seconds on top of the exercise's limit for the checks, the relay and the reply.
CHECK_SLACK = 5.0
# The judge's own run (the reference, the checks) is not the learner's time: it gets this much more.
JUDGE_SLACK = 60.0
MAX_AHEAD = 64  # further worlds' begins one verification may run ahead
END_WAIT = 5.0  # seconds the learner's cell gets to end once the judge has decided

FORGED = (
    "Your code displayed output in the checker's own result format ({mime}); a verdict comes only "
    "from the judge, which never runs your code, so this attempt fails."
)
SILENT = (
    "The kernel running your code stopped answering the checker after your code ran{why}: your code closed or "
    "replaced something the kernel answers with (sys.modules, an import hook, the display machinery, "
    "the connection to the checker), so "
    "nothing could be checked and this attempt fails."
)
ASKED = (
    "Your code sent the checker a prompt of its own (through the kernel's input machinery) while the kernel "
    "was to answer the checker, so nothing could be checked and this attempt fails. Give values in the code "
    "instead of asking for them."
)
GARBLED = (
    "The kernel running your code sent the checker something that is not an answer to its requests ({why}): "
    "your code wrote to the checker's connection or replaced what answers on it, so nothing could be checked "
    "and this attempt fails."
)
NO_JUDGE_END = "The checker could not connect to its own kernel, so nothing was checked; try again."
INTERRUPTED = (
    "Your code stopped the checker with KeyboardInterrupt (by raising it or by signalling the kernel), "
    "so nothing was checked and this attempt fails."
)


def learner_request(exercise: m.Exercise, code: str, device: str) -> dict:
    """What the learner's kernel is told: no solution, no check, no expected value."""
    return {
        "op": "begin",
        "world": "main",
        "setup": exercise.setup,
        "code": code,
        "seed": exercise.seed,
        "device": device,
        "module": exercise.learner_module,  # a module name only: the tests come after the code ran
        # Names whose setup binding the checks read (_setup.w): their names, not the checks.
        "keep_setup": exercise.setup_reads,
    }


def pipe_possible(learner: KernelSession, judge: KernelSession) -> bool:
    """Whether the two kernels can be piped: both run on this machine (a gateway's or an
    attached kernel may not), unless $PTFUND_TUTOR_NO_PIPE says to relay every prompt."""
    local = ("fork", "spawn")
    if os.environ.get(NO_PIPE_ENV):
        return False
    return learner.backend_name in local and judge.backend_name in local


def _pipe_port(head: str, begin_request: str) -> int | None:
    """The port in the learner's "the code ran, my end listens here" prompt; None for any other."""
    prefix = f"{ANSWER_PROMPT}{begin_request} pipe "
    number = head.removeprefix(prefix)
    if number == head or not number.isdigit() or not 0 < int(number) < 65536:
        return None
    return int(number)


def _learner_cell(function: str, request: str, text: str) -> str:
    # One call, nothing bound in the kernel's namespace.
    return f"__import__('ptfund_checks').learner_side({function!r}, {request!r}, {text!r})\n"


def _judge_cell(request: str, text: str) -> str:
    return f"__import__('ptfund_checks.judge').judge.judge({request!r}, {text!r})\n"


class _Relay:
    """Between the two kernels: the judge's questions to the learner's loop, its answers back.

    The learner's cell prompts once per answer and waits for the reply, its next request.
    The judge sends requests to run ahead ("ahead": the device run with the first answer, the
    further worlds once the main world passed, a function check's calls while the judge
    runs the reference on their cases): they go to the learner's kernel as soon as it is
    free, the judge goes on, and each answer is kept here until the judge asks for it by
    number. Over the pipe the judge does all that itself (pipe.Piped), and this is left
    with the learner's one prompt, connecting the pipe, and the judge's questions about it."""

    def __init__(
        self,
        begin_request: str,
        deadline: float,
        extend: Callable[[float], None],
        budget: float,
        pipe_tokens: tuple[str, str] | None = None,
    ):
        self.begin_request = begin_request  # the id the learner's first answer (its begin) names
        self.deadline = deadline
        self.extend = extend  # gives the learner's cell more time (seconds of its limit)
        self.budget = budget  # the learner's limit for one run of its code
        self.learner_run: asyncio.Future | None = None  # the learner's one cell, once sent
        self.fault: RunResult | None = None
        self.silent: str | None = None  # why the learner's kernel, still running, gave no answer
        self.finished = False
        self.asked = False  # the learner's code prompted the host itself
        loop = asyncio.get_running_loop()
        self._answer: asyncio.Future = loop.create_future()  # the prompt answering the last request sent
        self._next: asyncio.Future | None = None  # the reply the learner's pending input() waits for
        self._batches: dict[str, tuple[int, int]] = {}  # each "ahead" request's id: (first index, count)
        self._ahead: list[asyncio.Future] = []  # the answers to the requests run ahead, in order
        self._running: str | None = None  # the batch the learner's kernel runs ahead now
        # The pipe (pipe.py), offered to both kernels with these tokens (learner's, judge's):
        # the learner's first prompt names its end's port, or is its answer (it could not listen).
        self.pipe_tokens = pipe_tokens
        self.pipe: Pipe | None = None
        self.piping: bool | None = None if pipe_tokens else False
        self._learner_port: asyncio.Future = loop.create_future()
        self.garbled: str | None = None  # what the learner's side sent over the pipe that is no answer

    async def learner_prompt(self, prompt: str) -> str | None:
        """The learner's stdin: an answer arrives; the reply is the next request (or the end)."""
        head, _, answer = prompt.partition("\n")
        if self.piping is None:
            port = _pipe_port(head, self.begin_request)
            self.piping = port is not None
            self._learner_port.set_result(port)
            if port is not None:  # setup and the code ran: the checks' calls of it get some time too
                self.extend(CHECK_SLACK)
                return "end" if self.finished else ""
        elif self.piping:
            # Every answer goes over the pipe: a prompt now is the learner's code asking for input itself.
            self._asked_for_input()
            return "end"
        batch, slash, number = head.removeprefix(ANSWER_PROMPT).partition("/")
        if self._running is not None and not (slash and batch == self._running):
            # A prompt while the learner's kernel runs a batch ahead, not one of its answers:
            # the learner's code asked for input itself (the judge waits for the batch's answers).
            self._asked_for_input()
            for waiting in self._ahead:
                if not waiting.done():
                    waiting.set_result("")
            return "end"
        if slash and batch in self._batches:
            first, count = self._batches[batch]
            if number.isdigit() and int(number) < count and not self._ahead[first + int(number)].done():
                self._ahead[first + int(number)].set_result(answer)
            if number != str(count - 1):
                return "stop" if self.finished else ""
            # The batch's last answer: the learner's kernel is free, and its reply is the next request.
            self._running = None
        if self._next is not None and not self._next.done():
            # A second prompt while one waits: the learner's code asked for input itself.
            self._asked_for_input()
            if not self._answer.done():
                self._answer.set_result(prompt)
            return "end"
        if not self._answer.done():
            self._answer.set_result(prompt)
        if self._next is None:  # setup and the code ran: the checks' calls of it get some time too
            self.extend(CHECK_SLACK)
        if self.finished:
            return "end"
        self._next = asyncio.get_running_loop().create_future()
        return await self._next

    def finish(self) -> None:
        """The judge has decided: let the learner's cell end."""
        self.finished = True
        self.close()
        if self._next is not None and not self._next.done():
            self._next.set_result("end")

    def close(self) -> None:
        if self.pipe is not None:
            self.pipe.close()
            self.pipe = None
        elif self.piping and self._learner_port.done() and self.pipe_tokens is not None:
            # The learner's kernel waits for the host's connection, which never came (the
            # judge ended before its first request): connect and hang up, so its cell ends.
            with contextlib.suppress(OSError):
                connect_end(self._learner_port.result(), self.pipe_tokens[0]).close()
            self.piping = False

    async def _connect(self, header: dict) -> str:
        """The judge's first request over the pipe: connect the two ends once the learner's
        code has run (its kernel names its port then), and say so to the judge."""
        assert self.pipe_tokens is not None
        judge_port, runs = header.get("pipe"), header.get("runs")
        if not await self._answered(self._learner_port):
            return self._gone()
        port = self._learner_port.result()
        if port is None or not isinstance(judge_port, int) or not 0 < judge_port < 65536:
            if port is None:  # the learner's kernel could not listen: its answers come as prompts
                return await self._ask(self.begin_request, None)
            self.fault = RunResult(status="crashed", message=NO_JUDGE_END)
            return "fault:" + json.dumps({"status": "crashed", "message": NO_JUDGE_END})
        try:
            learner_end = connect_end(port, self.pipe_tokens[0])
        except OSError:
            # The port the learner's kernel named does not answer: its code closed or replaced the end.
            return await self._pipe_gone()
        try:
            judge_end = connect_end(judge_port, self.pipe_tokens[1])
        except OSError:
            learner_end.close()
            self.fault = RunResult(status="crashed", message=NO_JUDGE_END)
            return "fault:" + json.dumps({"status": "crashed", "message": NO_JUDGE_END})
        self.pipe = Pipe(learner_end, judge_end)
        if isinstance(runs, int) and 0 < runs <= MAX_AHEAD:
            self.extend(runs * self.budget)  # each begin run again runs the learner's code again
        return "pipe:" + self.begin_request

    async def _pipe_gone(self) -> str:
        """The judge read the end of the pipe: the learner's side ended, or closed its end."""
        run = self.learner_run
        assert run is not None
        if not run.done():
            await asyncio.wait([run], timeout=END_WAIT)
        if run.done():
            return self._gone()
        self.silent = ""  # alive, but what answers closed the pipe: the learner's code did
        self.fault = RunResult(status="ok")
        return "fault:" + json.dumps({"status": "silent", "message": self.silent})

    def _piped(self, header: dict) -> str | None:
        """The judge asking, over the pipe, about the learner's side; None for other requests."""
        op = header.get("op")
        run = self.learner_run
        if op == "alive":
            if self.deadline - time.perf_counter() <= 0:
                self.fault = RunResult(status="timeout")
                return "fault:" + json.dumps({"status": "timeout", "message": ""})
            return self._gone() if run is not None and run.done() else "ok:"
        if op == "garbled":
            self.garbled = str(header.get("why") or "")[:200]
            self.fault = RunResult(status="ok")
            return "fault:" + json.dumps({"status": "silent", "message": ""})
        return None

    def _send(self, request: str, body: str) -> bool:
        """Hand ``body`` to the learner's input() that waits, as request ``request``."""
        if self._next is None or self._next.done():
            return False
        self._answer = asyncio.get_running_loop().create_future()
        self._next.set_result(f"{request}\n{body}")
        return True

    async def _answered(self, waited: asyncio.Future) -> bool:
        """Wait for ``waited`` or the end of the learner's cell; True if it came."""
        run = self.learner_run
        assert run is not None
        if not waited.done():
            await asyncio.wait([waited, run], return_when=asyncio.FIRST_COMPLETED)
        return waited.done()

    async def _ask(self, request: str, body: str | None) -> str:
        """Send ``body`` as request ``request`` (None: the begin, already sent), then wait
        for the learner's answer or the end of its cell."""
        # A request waits until the learner's kernel is free (it may be running begins ahead).
        if body is not None and (not await self._answered(self._answer) or not self._send(request, body)):
            return self._gone()
        if not await self._answered(self._answer):
            return self._gone()
        head, _, answer = self._answer.result().partition("\n")
        if head != ANSWER_PROMPT + request:
            # Prompted with something the checker did not send: the learner's code asked for input itself.
            self._asked_for_input()
            return "fault:" + json.dumps({"status": "silent", "message": self.silent})
        return "ok:" + answer

    async def _run_ahead(self, header: dict, body: str) -> str:
        """The begins the judge wants run ahead: to the learner's kernel as soon as it is
        free; the judge goes on at once."""
        count = header.get("count")
        if not isinstance(count, int) or not 0 < count <= MAX_AHEAD - len(self._ahead):
            return "fault:" + json.dumps({"status": "crashed", "message": "the judge asked for too many runs ahead"})
        if not await self._answered(self._answer):
            return self._gone()
        batch = secrets.token_hex(8)
        self._batches[batch] = (len(self._ahead), count)
        self._ahead += [asyncio.get_running_loop().create_future() for _ in range(count)]
        if not self._send(batch, body):
            return self._gone()
        self._running = batch
        if not header.get("calls"):
            self.extend(count * self.budget)  # each begin runs the learner's code again
        return "ok:"

    async def _ahead_answer(self, header: dict) -> str:
        index = header.get("index")
        if not isinstance(index, int) or not 0 <= index < len(self._ahead):
            return "fault:" + json.dumps({"status": "crashed", "message": "the judge asked for a run nobody started"})
        if not await self._answered(self._ahead[index]):
            return self._gone()
        if self.asked:
            return "fault:" + json.dumps({"status": "silent", "message": self.silent})
        return "ok:" + self._ahead[index].result()

    def _asked_for_input(self) -> None:
        self.asked = True
        self.silent = ""
        self.fault = self.fault or RunResult(status="ok")

    def _gone(self) -> str:
        """The learner's cell ended (or never prompted): a time-out, a crash, or code that
        replaced what answers."""
        run = self.learner_run
        result = run.result() if run is not None and run.done() and not run.cancelled() else RunResult(status="crashed")
        self.fault = result
        if result.status in ("timeout", "crashed", "interrupted"):
            return "fault:" + json.dumps({"status": result.status, "message": result.message or ""})
        if result.refused:  # the answer was lost with output too large to take: the code's doing
            return "fault:" + json.dumps({"status": "refused", "message": result.message or ""})
        # The kernel is alive but what should answer did not: the learner's code replaced it
        # (sys.modules, a meta_path finder, the display machinery). The code's doing, not a crash.
        self.silent = f" ({result.error.ename}: {result.error.evalue[:200]})" if result.error else ""
        return "fault:" + json.dumps({"status": "silent", "message": self.silent})

    async def __call__(self, prompt: str) -> str:
        if self.fault is not None or not prompt.startswith(PROMPT):
            return "fault:" + json.dumps({"status": "crashed", "message": "the judge asked nothing this host knows"})
        header, body = split_header(prompt[len(PROMPT) :])
        if header.get("op") == "begin" and header.get("world") == "main":
            if self.pipe_tokens is not None and "pipe" in header:
                return await self._connect(header)
            return await self._ask(self.begin_request, None)
        if self.pipe is not None:
            if header.get("op") == "gone":
                return await self._pipe_gone()
            answered = self._piped(header)
            if answered is not None:
                return answered
        if header.get("op") == "ahead":
            return await self._run_ahead(header, body)
        if header.get("op") == "ahead-answer":
            if header.get("count") is not None:  # more begins to run ahead first, in the same round trip
                started = await self._run_ahead(header, body)
                if started != "ok:":
                    return started
            return await self._ahead_answer(header)
        if self.deadline - time.perf_counter() <= 0:
            self.fault = RunResult(status="timeout")
            return "fault:" + json.dumps({"status": "timeout", "message": ""})
        return await self._ask(secrets.token_hex(8), body)


async def verify_judged(
    exercise: m.Exercise,
    code: str,
    learner: KernelSession,
    judge: KernelSession,
    *,
    limit: float,
    on_output: OutputCallback | None = None,
    judge_state: dict | None = None,
    pipe: bool | None = None,
) -> Verdict:
    """The verdict of ``code`` from ``learner`` (runs it) and ``judge`` (decides).
    ``judge_state`` gets ``clean``: whether the judge's process was left as the verification
    found it (tutor/checks/judge.py process_state), so it may judge another exercise next.
    ``pipe``: requests and answers over the pipe (pipe.py) instead of relayed prompts; by
    default where both kernels run on this machine."""
    device = learner.device_info.kind if learner.device_info else "cpu"
    started = time.perf_counter()
    begin_id = secrets.token_hex(8)
    if pipe is None:
        pipe = pipe_possible(learner, judge)
    tokens = (secrets.token_hex(16), secrets.token_hex(16)) if pipe else None
    told = learner_request(exercise, code, device) | {"loop": True}
    if tokens is not None:
        told["pipe"] = tokens[0]
    begin_cell = _learner_cell("begin", begin_id, json.dumps(told))
    # The limit is CPU time (a busy machine does not fail correct code); the clock allows
    # more. The learner's one cell also answers the checks' calls of its code: once setup
    # and the code have run, they get CHECK_SLACK more. Waiting for the judge counts for neither.
    threads = max(1, exercise.threads)
    cpu, ceiling = cpu_limits(limit, threads)
    if not learner.attached:  # a kernel of our own: one torch thread unless the exercise asks for more
        begin_cell = threads_cell(exercise.threads) + begin_cell
    relay = _Relay(
        begin_id,
        started + ceiling + CHECK_SLACK,
        lambda seconds: learner.extend_limit(seconds * threads),
        limit,
        pipe_tokens=tokens,
    )
    begin = asyncio.ensure_future(
        learner.execute(
            begin_cell,
            on_output=on_output,
            timeout=ceiling,
            cpu_limit=cpu,
            stdin=relay.learner_prompt,
            echo_input=False,
            silent=True,  # no execute_input echoing the cell back, nothing kept in the kernel's history
        )
    )
    relay.learner_run = begin
    await asyncio.sleep(0)  # the learner's cell leaves first: the judge waits for its answer, not the reverse
    request = secrets.token_hex(16)
    from tutor.grading.outcome import build_payload  # the judge gets all the single-kernel path gets

    payload = build_payload(exercise, code, device)
    if tokens is not None:
        payload["pipe"] = tokens[1]
    judge_cell = _judge_cell(request, json.dumps(payload))
    if not judge.attached:
        # The reference runs with the learner's torch threads: a reduction split over other
        # threads rounds otherwise, and a check sensitive to noise would tell them apart.
        judge_cell = threads_cell(exercise.threads) + judge_cell
    try:
        judged = await judge.execute(
            # Silent: the cell's value (the result, sent as a display) is not displayed or kept in Out again.
            judge_cell,
            timeout=ceiling + CHECK_SLACK + JUDGE_SLACK,
            stdin=relay,
            echo_input=False,
            silent=True,
        )
        relay.finish()
        if not begin.done():
            await asyncio.wait([begin], timeout=END_WAIT)
    finally:
        relay.close()
        if not begin.done():
            begin.cancel()
    learner_runs = [begin.result()] if begin.done() and not begin.cancelled() else []
    if judge_state is not None:
        judge_state["clean"] = any(
            (display.data.get(RESULT_MIME) or {}).get("request") == request
            and (display.data.get(RESULT_MIME) or {}).get("clean") is True
            for display in judged.displays
        )
    from tutor.grading.hiding import conceal

    verdict = conceal(_verdict(judged, relay, learner_runs, request, limit), exercise)
    verdict.output = learner_runs[0].output if learner_runs else ""
    verdict.elapsed = time.perf_counter() - started
    return verdict


def _verdict(judged: RunResult, relay: _Relay, learner_runs: list[RunResult], request: str, limit: float) -> Verdict:
    for run in learner_runs:
        for display in run.displays:
            for mime in (RESULT_MIME, OLD_RESULT_MIME):
                if mime in display.data:
                    return Verdict("fail", FORGED.format(mime=mime))
    if relay.asked:
        return Verdict("error", ASKED)
    if relay.garbled is not None:
        return Verdict("error", GARBLED.format(why=relay.garbled))
    fault = relay.fault
    if fault is not None:
        if fault.status == "timeout":
            return Verdict("timeout", timeout_sentence(fault.error.traceback if fault.error else None, limit, fault))
        if fault.status == "interrupted":
            return Verdict("error", INTERRUPTED)
        if fault.refused and fault.status in ("ok", "error") and fault.message:  # output too large, not a crash
            return Verdict("error", fault.message)
        if relay.silent is not None:
            return Verdict("error", SILENT.format(why=relay.silent))
        from tutor.grading.outcome import crash_sentence

        return Verdict("crashed", crash_sentence(fault))
    result = None
    for display in judged.displays:
        bundle = display.data.get(RESULT_MIME)
        if isinstance(bundle, dict) and bundle.get("request") == request:
            try:
                result = json.loads(str(bundle.get("body")))
            except ValueError:
                result = None
            break
    if not isinstance(result, dict):
        detail = (
            f"{judged.error.ename}: {judged.error.evalue}" if judged.error else f"the judge's kernel {judged.status}"
        )
        return Verdict("crashed", f"The checker could not finish ({detail}).")
    from tutor.grading.outcome import verdict_from_result

    return verdict_from_result(result)
