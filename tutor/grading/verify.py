"""Fresh-kernel verification: setup + learner code + checks in a brand-new kernel.

A live kernel's stale state can never produce a pass: every verdict comes from a kernel
that has run nothing but this exercise (taken from the engine's warm spare, so no kernel
start sits on the critical path). With ``--kernel`` (an attached kernel that cannot be
replaced) the check library still runs setup, solution and learner code in fresh
namespaces of that kernel.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import secrets
import time
from typing import TYPE_CHECKING

from tutor.engine.events import RunResult
from tutor.grading.outcome import build_payload, crash_sentence, verdict_from_result
from tutor.grading.timeouts import cpu_limits, timeout_sentence
from tutor.grading.verdict import Verdict
from tutor.packs import models as m

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from tutor.engine.pool import KernelPool
    from tutor.engine.session import KernelSession, OutputCallback

RESULT_MIME = "application/vnd.ptfund+json"
# Extra seconds on top of the exercise's limit for the checks themselves and the reply.
CHECK_SLACK = 5.0


FORGED = (
    "Your code displayed output in the checker's own result format ({mime}); a verdict comes only "
    "from the checker's own run, so this attempt fails."
)


INTERRUPTED = (
    "Your code stopped the checker with KeyboardInterrupt (by raising it or by signalling the kernel), "
    "so nothing was checked and this attempt fails."
)


def new_request() -> str:
    """A fresh id per verification: only bundles that answer it count."""
    return secrets.token_hex(16)


def verification_program(payload: dict, request: str) -> str:
    """The one cell sent to the kernel. The check library answers ``request`` with display
    bundles of our own mime type, signed with a key the cell never contains (see
    tutor/checks/report.py)."""
    blob = json.dumps(payload)
    return (
        "def _ptfund_verify(request, blob):\n"
        "    import ptfund_checks\n"
        "    ptfund_checks.verify(request, blob)\n"
        f"_ptfund_verify({request!r}, {blob!r})\n"
        "del _ptfund_verify\n"
    )


class Answer:
    """What the kernel answered a request: the result, the last stage reached, forgeries."""

    def __init__(self, run: RunResult, request: str):
        self.result: dict | None = None
        self.stage: str | None = None
        self.forged = 0
        key: bytes | None = None
        for display in run.displays:
            bundle = display.data.get(RESULT_MIME)
            if bundle is None:
                continue
            body = _body(bundle)
            if key is None:
                if body and body.get("request") == request and body.get("kind") == "hello":
                    try:
                        key = bytes.fromhex(str(body.get("key")))
                        continue
                    except ValueError:
                        pass
                self.forged += 1
                continue
            if body is None or body.get("request") != request or not _signed(bundle, key):
                self.forged += 1
            elif body.get("kind") == "stage":
                self.stage = body.get("stage")
            elif body.get("kind") == "result" and self.result is None and isinstance(body.get("result"), dict):
                self.result = body["result"]
            else:
                self.forged += 1


def _body(bundle: dict) -> dict | None:
    try:
        body = json.loads(bundle["body"])
    except (TypeError, KeyError, ValueError):
        return None
    return body if isinstance(body, dict) else None


def _signed(bundle: dict, key: bytes) -> bool:
    sig = bundle.get("sig")
    if not isinstance(sig, str):
        return False
    want = hmac.new(key, bundle["body"].encode("utf-8"), hashlib.sha256).hexdigest()
    return hmac.compare_digest(want, sig)


def verdict_from_run(run: RunResult, time_limit: float, request: str = "") -> Verdict:
    """Turn what the kernel reported into a verdict the learner can act on."""
    answer = Answer(run, request)
    if answer.forged:
        return Verdict("fail", FORGED.format(mime=RESULT_MIME), output=run.output, elapsed=run.elapsed)
    if run.status == "timeout":
        return Verdict(
            "timeout",
            timeout_sentence(run.error.traceback if run.error else None, time_limit, run),
            output=run.output,
            elapsed=run.elapsed,
        )
    if run.status == "interrupted":
        # Only the time limit interrupts a verification; this interrupt came from the code.
        return Verdict("error", INTERRUPTED, output=run.output, elapsed=run.elapsed)
    if run.status in ("crashed", "interrupted"):
        return Verdict("crashed", crash_sentence(run), output=run.output, elapsed=run.elapsed)
    bundle = answer.result
    if bundle is None:
        if run.error is not None and run.error.ename == "KeyboardInterrupt":
            return Verdict("error", INTERRUPTED, output=run.output, elapsed=run.elapsed)
        detail = f"{run.error.ename}: {run.error.evalue}" if run.error else "no result came back"
        return Verdict("crashed", f"The checker could not finish ({detail}).", output=run.output, elapsed=run.elapsed)
    verdict = verdict_from_result(bundle)
    verdict.output = run.output
    verdict.elapsed = run.elapsed
    return verdict


class Verifier:
    """Verifies attempts, each in a fresh learner's kernel from the pool with a judge's kernel
    beside it (or in fresh namespaces of an attached kernel)."""

    def __init__(
        self,
        pool: KernelPool | None = None,
        *,
        attached: KernelSession | None = None,
        device: str | None = None,
        reuse_judges: bool = False,
    ) -> None:
        """``reuse_judges`` (a batch: `grade`): a judge's kernel never runs learner code, so
        after a clean verification it is kept for the next attempt at the same exercise,
        or at another exercise while the judge reports its process as it was before its
        first verification (no global switch of torch flipped, nothing in torch or builtins
        rebound: an exercise's setup cannot then reach the next exercise's reference); run
        the batch with :meth:`fan_out`, which shuts the kept ones down at the end."""
        if pool is None and attached is None:
            raise ValueError("Verifier needs a KernelPool or an attached KernelSession")
        self.pool = pool
        self.attached = attached
        self.device = device
        self.reuse_judges = reuse_judges
        # (the exercise it judged last, the judge, whether it may judge another one), oldest first
        self._idle_judges: list[tuple[tuple, KernelSession, bool]] = []

    async def fan_out(
        self,
        jobs: int,
        worker: Callable[[], Awaitable[None]],
        on_judge_end: Callable[[KernelSession], None] | None = None,
    ) -> None:
        """The pool's ``fan_out``, then the kept judges shut down (they are this verifier's);
        ``on_judge_end`` sees each one first (a benchmark counts its CPU)."""
        assert self.pool is not None
        try:
            await self.pool.fan_out(jobs, worker)
        finally:
            judges = [judge for _, judge, _ in self._idle_judges]
            self._idle_judges.clear()
            if on_judge_end is not None:
                for judge in judges:
                    on_judge_end(judge)
            await asyncio.gather(*(judge.shutdown() for judge in judges), return_exceptions=True)

    def drop_judges(self, exercise: m.Exercise) -> None:
        """Shut down the judges kept for ``exercise`` (no more attempts at it will come)."""
        assert self.pool is not None
        key = _judge_key(exercise)
        for entry in [entry for entry in self._idle_judges if entry[0] == key]:
            self._idle_judges.remove(entry)
            self.pool.give_back(entry[1])

    def _idle_judge(self, key: tuple) -> KernelSession | None:
        """A kept judge: the one that judged this exercise last, else one that may judge
        another exercise (a kernel start saved either way)."""
        for wanted in (lambda kept, clean: kept == key, lambda kept, clean: clean):
            for index, (kept, judge, clean) in enumerate(self._idle_judges):
                if wanted(kept, clean):
                    del self._idle_judges[index]
                    return judge
        return None

    def _keep_judge(self, key: tuple, judge: KernelSession, clean: bool) -> None:
        assert self.pool is not None
        self._idle_judges.append((key, judge, clean))
        while len(self._idle_judges) > self.pool.size:  # judges of exercises no longer graded
            self.pool.give_back(self._idle_judges.pop(0)[1])

    async def verify(
        self,
        exercise: m.Exercise,
        code: str,
        *,
        timeout: float | None = None,
        on_output: OutputCallback | None = None,
    ) -> Verdict:
        """The verdict; ``on_output`` gets the kernel's events as they come (the learner's
        prints stream; the reference solution's are captured by the check library). When
        the caller is cancelled the code stops: a spare kernel is shut down, an attached one
        interrupted."""
        limit = timeout or exercise.time_limit
        if self.attached is None:
            return await self._judged(exercise, code, limit, on_output)
        started = time.perf_counter()
        kernel = self.attached
        await kernel.start()
        device = kernel.device_info.kind if kernel.device_info else (self.device or "cpu")
        request = new_request()
        program = verification_program(build_payload(exercise, code, device), request)
        cpu, ceiling = cpu_limits(limit + CHECK_SLACK, exercise.threads)  # a wall-clock limit when attached
        execution = asyncio.ensure_future(kernel.execute(program, on_output=on_output, timeout=ceiling, cpu_limit=cpu))
        try:
            run = await asyncio.shield(execution)
        except asyncio.CancelledError:
            await kernel.interrupt()  # an attached kernel stays: stop the code in it
            raise
        from tutor.grading.hiding import conceal

        verdict = conceal(verdict_from_run(run, limit, request), exercise)
        verdict.elapsed = time.perf_counter() - started
        return verdict

    async def _judged(self, exercise: m.Exercise, code: str, limit: float, on_output: OutputCallback | None) -> Verdict:
        """Two kernels: the learner's, fresh from the pool, runs the code and is thrown away;
        the judge's decides (tutor/grading/judging.py) and is thrown away too, unless kept
        for the next attempt at this exercise (``reuse_judges``)."""
        from tutor.grading.judging import verify_judged

        assert self.pool is not None  # __init__ requires one of the two
        key = _judge_key(exercise)
        learner = await self.pool.take()
        judge = self._idle_judge(key) if self.reuse_judges else None
        kept = False
        try:
            if judge is None:
                judge = await self.pool.take()
            state: dict = {}
            verdict = await verify_judged(
                exercise, code, learner, judge, limit=limit, on_output=on_output, judge_state=state
            )
            if self.reuse_judges and verdict.status in ("pass", "fail", "error") and judge.state == "ready":
                self._keep_judge(key, judge, bool(state.get("clean")))
                kept = True
            return verdict
        finally:
            # Disposed in the background (the pool waits for it at its shutdown): the
            # verdict should not wait for a kernel to exit.
            self.pool.give_back(learner)
            if judge is not None and not kept:
                self.pool.give_back(judge)


def _judge_key(exercise: m.Exercise) -> tuple:
    return (exercise.id, exercise.setup, exercise.judge_setup, exercise.solution)


# A verification from a pool takes two fresh kernels: the learner's and the judge's (judging.py).
KERNELS_PER_VERIFICATION = 2


async def verify_in_fresh_kernel(
    exercise: m.Exercise,
    code: str,
    *,
    device: str | None = None,
    connection_file: str | None = None,
    timeout: float | None = None,
    pool: KernelPool | None = None,
) -> Verdict:
    """One verification: with ``pool`` (the warm server's) in a spare from it; else without
    a pool (the CLI): start a kernel, verify, shut it down."""
    from tutor.engine import KernelSession
    from tutor.engine.pool import warm_up

    if pool is not None and connection_file is None:
        return await Verifier(pool, device=device).verify(exercise, code, timeout=timeout)
    if connection_file is not None:
        # An attached kernel (--kernel) is the one place both roles share a process.
        session = KernelSession(device=device, connection_file=connection_file, recover=True)
        await session.start()
        await warm_up(session, timeout=120)
        return await Verifier(attached=session).verify(exercise, code, timeout=timeout)
    from tutor.grading.judging import verify_judged

    learner, judge = KernelSession(device=device), KernelSession(device=device)
    try:
        await asyncio.gather(learner.start(), judge.start())
        # torch's first-use costs (torch._dynamo on the first meta op, a GPU's context) are
        # paid here, as a pool's spare pays them while it waits: never inside time_limit.
        await asyncio.gather(warm_up(learner, timeout=120), warm_up(judge, timeout=120))
        return await verify_judged(exercise, code, learner, judge, limit=timeout or exercise.time_limit)
    finally:
        await asyncio.gather(learner.shutdown(), judge.shutdown(), return_exceptions=True)
