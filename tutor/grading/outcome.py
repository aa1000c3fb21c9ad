"""What a verification sends and what its result means: the payload the check library gets
(``build_payload``), the sentence for a kernel that crashed while checking
(``crash_sentence``), and the check library's result as a ``Verdict``
(``verdict_from_result``). Shared by the single-kernel path (verify.py) and the judged one
(judging.py), so neither imports the other for them.
"""

from __future__ import annotations

from tutor.engine.events import RunResult
from tutor.engine.faults import without_restart
from tutor.grading.mistake_ids import ids_by_message
from tutor.grading.verdict import CheckLine, Verdict
from tutor.packs import models as m


def build_payload(exercise: m.Exercise, code: str, device: str) -> dict:
    return {
        "setup": exercise.setup,
        "judge_setup": exercise.judge_setup,
        "code": code,
        "solution": exercise.solution,
        "seed": exercise.seed,
        "checks": [c.model_dump() for c in exercise.checks],
        "mistakes": [mk.model_dump() | {"id": mk.stable_id} for mk in exercise.mistakes],
        "device": device,
        "device_run": exercise.follows_device,
        "time_limit": exercise.time_limit,
        "worlds": exercise.worlds(),
        "module": exercise.learner_module,
    }


def crash_sentence(run: RunResult) -> str:
    # The engine's sentence may end with what a crash means for a live session (variables
    # gone); a verification kernel is thrown away anyway, so that part would only confuse.
    return without_restart(run.message or "The kernel stopped while checking your code.")


def _plain(message: str) -> str:
    """Messages are stored without a leading mark: the verdict adds ✓/✗ when it shows them."""
    return message[2:] if message[:2] in ("✓ ", "✗ ") else message


def verdict_from_result(result: dict) -> Verdict:
    checks = [
        CheckLine(
            id=c.get("id"),
            kind=c.get("kind", "?"),
            passed=bool(c.get("passed")),
            message=_plain(c.get("message", "")),
            expected=c.get("expected"),
            actual=c.get("actual"),
        )
        for c in result.get("checks", [])
    ]
    # A mistake is advice for a failing attempt; on a pass a broad condition must not nag.
    mistakes = list(dict.fromkeys(result.get("mistakes") or [])) if not result.get("passed") else []
    ids = ids_by_message(result)
    mistake_ids = [ids[message] for message in mistakes]
    if result.get("tampered"):
        return Verdict("fail", str(result["tampered"]), mistakes=[])
    broken = [c for c in result.get("checks", []) if (c.get("details") or {}).get("authoring_error")]
    if broken and (result.get("error") or {}).get("stage") not in ("setup", "solution"):
        name = broken[0].get("id") or f"the {broken[0].get('kind')} check"
        return Verdict(
            "authoring-error",
            f"This exercise is broken: {name}: {_plain(broken[0].get('message', ''))}. Tell the pack's author.",
            checks=checks,
        )
    error = result.get("error")
    failed = sum(not c.passed for c in checks)
    total = len(checks)
    if error and error.get("stage") in ("setup", "solution"):
        where = "setup code" if error["stage"] == "setup" else "reference solution"
        return Verdict(
            "authoring-error",
            f"This exercise is broken: its {where} raised {error.get('ename')}: {error.get('evalue')}. Tell the pack's author.",
            checks=checks,
            error="\n".join(error.get("traceback") or []),
        )
    error_text = "\n".join(error.get("traceback") or []) if error else None
    if result.get("passed") and not error:
        return Verdict(
            "pass",
            f"All {total} check{'s' if total != 1 else ''} pass." if total > 1 else "The check passes.",
            checks=checks,
            mistakes=mistakes,
            mistake_ids=mistake_ids,
            worlds_alike=bool(result.get("worlds_alike")),
        )
    if error:
        line = error.get("line")
        at = f" at line {line}" if line else ""
        if error.get("ename") == "StdinNotImplementedError":
            headline = (
                f"Your code called input(){at}: checks run without a keyboard, so give the value in the code instead."
            )
        else:
            evalue = error.get("evalue")
            headline = f"Your code raised {error.get('ename')}{at}" + (f": {evalue}" if evalue else ".")
        return Verdict("error", headline, checks=checks, mistakes=mistakes, mistake_ids=mistake_ids, error=error_text)
    headline = f"{failed} of {total} checks fail." if total > 1 else "The check fails."
    return Verdict("fail", headline, checks=checks, mistakes=mistakes, mistake_ids=mistake_ids)
