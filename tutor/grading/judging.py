"""A verification in two kernels: the learner's runs the code, the judge decides.

The host takes two fresh kernels. The learner's kernel gets the exercise's setup, the
learner's code, the seed and the device, nothing else (tutor/checks/learner.py). The judge's
kernel gets everything that decides the verdict: setup, reference solution, checks,
mistakes (tutor/checks/judge.py). While the judge runs the reference, the learner's kernel
runs setup and the code; then every question the judge has about the learner's values or
code arrives here as an ``input()`` prompt of the judge, is relayed as one cell to the
learner's kernel, and its answer (data: base64 of a torch.save the judge loads with
``weights_only=True``) goes back as the reply. The host reads only plain headers and never
decodes what it relays: it imports no torch.

What can end the learner's side early (a time-out, a crash, ``os._exit``) is told to the
judge as a fault, which ends its checks; the verdict then says what happened to the code.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tutor.engine.events import RunResult
from tutor.grading.timeouts import cpu_limits, threads_cell, timeout_sentence
from tutor.grading.verdict import Verdict
from tutor.packs import models as m

if TYPE_CHECKING:
    from tutor.engine.session import KernelSession, OutputCallback

ANSWER_MIME = "application/vnd.ptfund.answer+json"  # the learner's kernel answering the judge
RESULT_MIME = "application/vnd.ptfund.verdict+json"  # the judge's result
OLD_RESULT_MIME = "application/vnd.ptfund+json"  # the single-kernel path's (tutor/checks/report.py)
PROMPT = "ptfund-judge:"
# Seconds on top of the exercise's limit for the checks, the relay and the reply.
CHECK_SLACK = 5.0
# The judge's own run (the reference, the checks) is not the learner's time: it gets this much more.
JUDGE_SLACK = 60.0

FORGED = (
    "Your code displayed output in the checker's own result format ({mime}); a verdict comes only "
    "from the judge, which never runs your code, so this attempt fails."
)
SILENT = (
    "The kernel running your code stopped answering the checker after your code ran{why}: your code "
    "replaced something the kernel answers with (sys.modules, an import hook, the display machinery), so "
    "nothing could be checked and this attempt fails."
)
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
    }


def _learner_cell(function: str, request: str, text: str) -> str:
    # One call, nothing bound in the kernel's namespace.
    return f"__import__('ptfund_checks').learner_side({function!r}, {request!r}, {text!r})\n"


def _judge_cell(request: str, text: str) -> str:
    return f"__import__('ptfund_checks.judge').judge.judge({request!r}, {text!r})\n"


@dataclass
class _Relay:
    learner: KernelSession
    deadline: float
    on_output: OutputCallback | None
    begin: asyncio.Future
    runs: list[RunResult] = field(default_factory=list)
    fault: RunResult | None = None
    silent: str | None = None  # why the learner's kernel, still running, gave no answer

    def answer(self, run: RunResult, request: str) -> str:
        self.runs.append(run)
        if run.status in ("timeout", "crashed", "interrupted"):
            self.fault = run
            return "fault:" + json.dumps({"status": run.status, "message": run.message or ""})
        for display in run.displays:
            bundle = display.data.get(ANSWER_MIME)
            if isinstance(bundle, dict) and bundle.get("request") == request and isinstance(bundle.get("body"), str):
                return "ok:" + bundle["body"]
        # The kernel is alive but what should answer did not: the learner's code replaced it
        # (sys.modules, a meta_path finder, the display machinery). The code's doing, not a crash.
        self.fault = run
        self.silent = f" ({run.error.ename}: {run.error.evalue[:200]})" if run.error else ""
        return "fault:" + json.dumps({"status": "silent", "message": self.silent})

    async def __call__(self, prompt: str) -> str:
        if self.fault is not None or not prompt.startswith(PROMPT):
            return "fault:" + json.dumps({"status": "crashed", "message": "the judge asked nothing this host knows"})
        header_text, _, body = prompt[len(PROMPT) :].partition("\n")
        try:
            header = json.loads(header_text)
        except ValueError:
            header = {}
        if header.get("op") == "begin" and header.get("world") == "main":
            return self.answer(await self.begin, self.begin_request)
        remaining = self.deadline - time.perf_counter()
        if remaining <= 0:
            self.fault = RunResult(status="timeout")
            return "fault:" + json.dumps({"status": "timeout", "message": ""})
        request = secrets.token_hex(8)
        run = await self.learner.execute(
            _learner_cell("serve", request, body), on_output=self.on_output, timeout=remaining
        )
        return self.answer(run, request)

    begin_request: str = ""


async def verify_judged(
    exercise: m.Exercise,
    code: str,
    learner: KernelSession,
    judge: KernelSession,
    *,
    limit: float,
    on_output: OutputCallback | None = None,
) -> Verdict:
    """The verdict of ``code`` from ``learner`` (runs it) and ``judge`` (decides)."""
    device = learner.device_info.kind if learner.device_info else "cpu"
    started = time.perf_counter()
    begin_id = secrets.token_hex(8)
    begin_cell = _learner_cell("begin", begin_id, json.dumps(learner_request(exercise, code, device)))
    # The limit is CPU time (a busy machine does not fail correct code); the clock allows more.
    cpu, ceiling = cpu_limits(limit, exercise.threads)
    if not learner.attached:  # a kernel of our own: one torch thread unless the exercise asks for more
        begin_cell = threads_cell(exercise.threads) + begin_cell
    begin = asyncio.ensure_future(learner.execute(begin_cell, on_output=on_output, timeout=ceiling, cpu_limit=cpu))
    relay = _Relay(learner, started + ceiling + CHECK_SLACK, on_output, begin)
    relay.begin_request = begin_id
    request = secrets.token_hex(16)
    from tutor.grading.outcome import build_payload  # the judge gets all the single-kernel path gets

    judge_cell = _judge_cell(request, json.dumps(build_payload(exercise, code, device)))
    try:
        judged = await judge.execute(
            judge_cell, timeout=ceiling + CHECK_SLACK + JUDGE_SLACK, stdin=relay, echo_input=False
        )
    finally:
        if not begin.done():
            begin.cancel()
    learner_runs = [begin.result()] if begin.done() and not begin.cancelled() else []
    learner_runs += [r for r in relay.runs if r not in learner_runs]
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
    fault = relay.fault
    if fault is not None:
        if fault.status == "timeout":
            return Verdict("timeout", timeout_sentence(fault.error.traceback if fault.error else None, limit, fault))
        if fault.status == "interrupted":
            return Verdict("error", INTERRUPTED)
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
