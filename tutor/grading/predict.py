"""Predict-the-output cards: run the card's code in a kernel and derive the answer key.

The key is stdout plus the text/plain repr of the last expression (Jupyter's
execute_result), stripped; if the code raises, the exception's class name. torch only
ever runs inside the kernel (tutor.engine); this module imports neither torch nor jupyter
at import time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tutor.engine.events import RunResult

if TYPE_CHECKING:
    from tutor.engine.session import KernelSession

DEFAULT_TIMEOUT = 30.0


@dataclass(frozen=True)
class PredictOutcome:
    output: str  # stdout and stderr as the kernel printed them
    exception: str | None  # the exception's class name, if the code raised
    shown: str  # what to show the learner: output, last value, or "RuntimeError: message"
    key: str  # the answer key this run produces (see module doc)
    problem: str | None = None  # one sentence when the run did not finish (timeout, crash)

    @property
    def ok(self) -> bool:
        """The run finished (normally or with an exception), so ``key`` can be trusted."""
        return self.problem is None


def outcome_from_result(r: RunResult) -> PredictOutcome:
    output = r.output or ""
    if r.refused and r.status in ("ok", "error") and r.message:  # output dropped for its size: no key to trust
        return PredictOutcome(output, None, (output.rstrip() + "\n" + r.message).strip(), "", r.message)
    if r.status in ("timeout", "interrupted", "crashed"):
        problem = (
            r.message
            or {
                "timeout": "The code did not finish in time.",
                "interrupted": "The code was interrupted.",
                "crashed": "The kernel crashed while running the code.",
            }[r.status]
        )
        return PredictOutcome(output, None, (output.rstrip() + "\n" + problem).strip(), "", problem)
    if r.error is not None:
        exc = r.error.ename
        line = f"{exc}: {r.error.evalue}" if r.error.evalue else exc
        shown = (output.rstrip() + "\n" + line).strip()
        return PredictOutcome(output, exc, shown, exc)
    parts = [output.rstrip("\n")] if output.strip() else []
    if r.result_text is not None:
        parts.append(r.result_text)
    shown = "\n".join(parts).strip()
    return PredictOutcome(output, None, shown, shown)


async def run_predict(session: KernelSession, code: str, *, timeout: float = DEFAULT_TIMEOUT) -> PredictOutcome:
    """Run ``code`` in a started ``tutor.engine.KernelSession`` and describe what happened."""
    result = await session.execute(code, timeout=timeout)
    return outcome_from_result(result)
