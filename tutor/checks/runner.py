"""run_verification: the whole grading run inside the kernel.

Payload (JSON types; checks and mistakes are the pack models' ``model_dump()``)::

    {"setup": str, "code": str (the learner's), "solution": str (reference), "seed": int,
     "checks": [check dict, ...], "mistakes": [mistake dict, ...], "device": "cpu"|"cuda"|"mps"}

Steps: the reference namespace (seed random/numpy/torch, setup, solution), then the
learner's (same seed, setup, code); both hold ``DEVICE`` and ``__name__ == "__main__"``.
Then every check, then the mistakes. Result (plain JSON types)::

    {"passed": bool,   # no error at any stage and every check passed
     "error": None | {"stage": "setup"|"solution"|"code", "ename", "evalue", "line", "traceback": [line, ...]},
     "checks": [{"id", "kind", "passed", "expected", "actual", "message", "details"}, ...],
     "mistakes": [message, ...],   # authored matches; else built-in signatures not said by a check
     "mistake_ids": [id, ...]}     # one per message: the authored mistake's id, "auto:TOPIC" or None

``KeyboardInterrupt`` (the kernel interrupted for the time limit) is the only exception
that leaves; everything else becomes an error or a failed check. With ``library`` (the
private copy of this library, see sealed.py) the run also watches for tampering (guard.py):
then the result has ``"tampered": sentence`` and fails.
"""

import builtins
import contextlib
import re
from time import monotonic as _monotonic

import torch

from . import setupnames, signatures, typedin, untouched
from .context import AuthoringError, Context, Outcome, raised_text
from .describe import jsonable
from .devicerun import device_problems
from .diagnose import diagnose, found_text
from .guard import Snapshot, Tampered
from .kinds import KINDS
from .mistakes import matched_messages
from .namespaces import (
    FALLBACKS,
    SETUP,
    SOLUTION,
    YOUR_CODE,
    BoundedOutput,
    captured,
    filtered_traceback,
    learner_interrupt,
    new_namespace,
    own_frames,
    run_code,
    run_reference_setup,
    seed_all,
)
from .reads import Reads
from .trace import Tracer
from .tracediff import MISTAKES

DEVICE_RUN_SHARE = 0.5  # of time_limit: a first run slower than this skips the device run
AUTHORING = "this check could not run (a problem in the exercise, not in your code)"


def _compose(check: dict, outcome: Outcome) -> str:
    """A failing check leads with the author's message, then says what differs; not where
    the check could not be evaluated because the learner's code stopped first (its
    names are missing): what the author wrote for a wrong value would give a false cause."""
    authored = (check.get("message") or "").strip()
    if outcome.passed or not authored or (outcome.details or {}).get("code_stopped"):
        return outcome.message
    return f"{authored}\n{outcome.message}" if outcome.message else authored


def _defined_nowhere(exc: BaseException, ctx: Context) -> str | None:
    """The name a check's own expression uses that no namespace defines: the exercise
    forgot it (in setup:), the learner cannot be blamed."""
    name = getattr(exc, "name", None) if isinstance(exc, NameError) else None
    if not name or own_frames(exc):
        return None
    if name in ctx.ref or name in ctx.learner or name in FALLBACKS or hasattr(builtins, name):
        return None
    return name


def run_check(check: dict, ctx: Context) -> dict:
    kind = check.get("kind")
    ctx.label = check.get("label")
    handler = KINDS.get(str(kind))
    try:
        if handler is None:
            outcome = Outcome(False, f"{AUTHORING}: unknown check kind '{kind}'", details={"authoring_error": True})
        else:
            outcome = handler(check, ctx)
    except KeyboardInterrupt as exc:
        if not learner_interrupt():
            raise  # the kernel is being interrupted (time limit): not a verdict
        outcome = Outcome(False, ctx.explain(exc, check.get("expr") or check.get("name"), shown=kind != "python"))
    except AuthoringError as exc:
        outcome = Outcome(False, f"{AUTHORING}: {exc}", details={"authoring_error": True})
    except (Exception, SystemExit) as exc:  # a crashing check is a failed check, never an escape
        expr = check.get("expr") or check.get("name")
        details: dict[str, object] = {"raised": type(exc).__name__, "raised_text": raised_text(exc)}
        if own_frames(exc):
            details["traceback"] = filtered_traceback(exc)
        unknown = _defined_nowhere(exc, ctx)
        if unknown:
            outcome = Outcome(
                False,
                f"{AUTHORING}: it uses {unknown}, which neither the setup nor the reference solution defines",
                details={"authoring_error": True},
            )
        else:
            if ctx.code_error is not None and isinstance(exc, NameError):
                details["code_stopped"] = True  # a name the code would have defined, had it run on
            outcome = Outcome(False, ctx.explain(exc, expr, shown=kind != "python"), details=details)
    message = _compose(check, outcome)
    details = outcome.details
    if message != outcome.message:
        # What the check found, apart from the author's words: an error quoted in those
        # ("... raises 'Expected all tensors to be on the same device'") was never raised.
        details = {**(details or {}), "found": outcome.message}
    return {
        "id": check.get("id"),
        "kind": kind,
        "passed": bool(outcome.passed),
        "expected": outcome.expected,
        "actual": outcome.actual,
        "message": message,
        "details": details,
    }


def _unauthored_common_raises(checks: list, results: list, code_error=None) -> None:
    """An error that several checks raised alike (an optimizer refusing an empty parameter
    list, a hook with the wrong signature) says nothing particular to any one of them: their
    authored messages, written for what a wrong value means ("The pretrained weights moved"),
    would state a cause, so they are left out. Errors alike but for their numbers (a bound,
    a size, a worker's id: each check's data gives its own) count as one. A check that alone
    raises keeps its message: its own requirement may be what the error comes from, unless
    the learner's code raised the same error itself (``code_error``: a hook that raises at
    every call stops the code and every check that calls the model alike)."""
    texts = [_numbers_aside((r.get("details") or {}).get("raised_text")) if not r["passed"] else None for r in results]
    own = _numbers_aside(f"{code_error.ename}: {code_error.evalue}"[:1500]) if code_error is not None else None
    # Code that did not parse never ran: what a check finds then is the setup's state, and no
    # authored cause of a wrong value holds of it.
    unparsed = code_error is not None and bool(getattr(code_error, "syntax", False))
    for check, result, text in zip(checks, results, texts, strict=False):
        authored = (check.get("message") or "").strip()
        common = unparsed or (text and (texts.count(text) > 1 or text == own))
        if not result["passed"] and common and authored and result["message"].startswith(authored + "\n"):
            result["message"] = result["message"][len(authored) + 1 :]


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _numbers_aside(text: str | None) -> str | None:
    """An error's first line with each number written as #: the same error on other data
    (what follows may be a traceback of the call that raised, which differs per check)."""
    return _NUMBER.sub("#", text.split("\n", 1)[0]) if text else text


def _not_run(check: dict, why: str) -> dict:
    return {
        "id": check.get("id"),
        "kind": check.get("kind"),
        "passed": False,
        "expected": None,
        "actual": None,
        "message": why,
        "details": {"authoring_error": True},
    }


# Function checks draw other inputs in another world: their seeds move by this per world.
INPUT_SHIFT = 1_000_003


def world_setup(payload: dict, spec: dict) -> tuple[str, int, str]:
    """A further world's setup (the exercise's, then its variant), seed and variant."""
    seed = int(spec.get("seed") or 0)
    variant = str(spec.get("variant") or "")
    return (payload.get("setup") or "") + ("\n" + variant if variant else ""), seed, variant


def broken_in_world(result: dict, seed: int, variant: str, number: int) -> dict:
    """The exercise's own setup or reference failed in world ``number``: say where, for the author."""
    error = dict(result.get("error") or {})
    where = f"in its world {number} (setup again with seed {seed}" + (", then its variant" if variant else "") + ")"
    error["evalue"] = f"{error.get('evalue') or ''} ({where})".strip()
    return {**result, "error": error, "world": number}


def on_other_data(result: dict, seed: int, variant: str, number: int, payload: dict | None = None) -> dict:
    """A verification that failed only in world ``number``, said so: each failure is on
    other data, and what that means leads the feedback. "Typed in" is said only where the
    learner's code (``payload["code"]``) writes a failing check's name as a literal."""
    data = f"setup run again with seed {seed}" + (" and the exercise's variant" if variant else "")
    failing = set()
    for check in result.get("checks") or []:
        if not check.get("passed"):
            check["message"] = f"On other data ({data}): {check['message']}"
            check.setdefault("details", {})["world"] = number
            failing.add(check.get("id"))
    specs = [c for c in (payload or {}).get("checks") or [] if isinstance(c, dict)]
    exprs = [str(c.get("expr") or "") for c in specs if c.get("id") in failing] or [
        str(c.get("expr") or "") for c in specs
    ]
    typed = typedin.literal_line(str((payload or {}).get("code") or ""), exprs)
    lead = f"Your code is right for the exercise's data but not for other data ({data}): "
    if typed is not None:
        lead += (
            f"it writes {typed[0]} as a literal (line {typed[1]}), and a result typed in, or copied from the "
            "prompt, fits one input only."
        )
    else:
        lead += "what it does is right on the first data only; what differs on the other data is below."
    result["mistakes"] = [lead, *result.get("mistakes", [])]
    result["world"] = number
    return result


def _data(value) -> list | None:
    """The tensors a value holds, for comparing two worlds (None: not data)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, torch.nn.Module):
        return [t for t in value.state_dict().values() if isinstance(t, torch.Tensor)]
    if type(value).__module__ == "numpy" and hasattr(value, "shape"):
        import numpy as np

        return [torch.from_numpy(np.asarray(value))] if np.asarray(value).dtype != object else None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [torch.tensor(value)]
    return None


def worlds_alike(first: dict, second: dict, checks: list) -> bool:
    """Whether a further world gave the reference the same data as the first: then it
    proves nothing more (a setup without random draws; pack test asks for a variant).
    Function checks draw their own inputs in each world, and so do the hypothesis tests of a
    pytest check (seeded with the world's seed), so they always differ."""
    if any(
        c.get("kind") == "function" or (c.get("kind") == "pytest" and "hypothesis" in str(c.get("code")))
        for c in checks
    ):
        return False
    for key, value in first.items():
        if key.startswith("__") or key not in second:
            continue
        a, b = _data(value), _data(second[key])
        if a is None or b is None:
            continue
        if len(a) != len(b):
            return False
        for x, y in zip(a, b, strict=True):
            if x.is_meta or y.is_meta:
                continue
            if x.shape != y.shape or x.dtype != y.dtype or not torch.equal(x.detach().cpu(), y.detach().cpu()):
                return False
    return True


def run_verification(payload: dict, library: dict | None = None, stage=None) -> dict:
    stage = stage or (lambda name: None)
    payload = {**payload, "_started": _monotonic()}
    try:
        return _run(payload, library, stage)
    except Tampered as exc:
        return {"passed": False, "error": None, "checks": [], "mistakes": [], "tampered": str(exc)}


def _run(payload: dict, library: dict | None, stage) -> dict:
    setup = payload.get("setup") or ""
    code = payload.get("code") or ""
    solution = payload.get("solution") or ""
    seed = int(payload.get("seed") or 0)
    checks = list(payload.get("checks") or [])
    mistakes = list(payload.get("mistakes") or [])
    device = torch.device(payload.get("device") or "cpu")

    if payload.get("trace") is False:  # benchmarks/feedback.py measures what tracing costs
        return _verify(setup, code, solution, seed, checks, mistakes, device, None, library, stage, payload)
    tracer = Tracer().install()
    try:
        return _verify(setup, code, solution, seed, checks, mistakes, device, tracer, library, stage, payload)
    finally:
        tracer.uninstall()


def _recording(tracer, side: str):
    return tracer.recording(side) if tracer is not None else contextlib.nullcontext()


def _verify(setup, code, solution, seed, checks, mistakes, device, tracer, library, stage, payload) -> dict:
    ref, learner = new_namespace(device), new_namespace(device, payload.get("module"))
    quiet = BoundedOutput(limit=0)
    reads = {"ref": Reads(), "learner": Reads()}  # for the device run, where meta has no data
    with captured(quiet), reads["ref"].recording():  # the reference's prints would give the answer away
        seed_all(seed)
        keep = setupnames.of_payload(payload)
        setup_error = run_reference_setup(setup, ref, payload.get("judge_setup") or "", keep)
        solution_error = None
        if not setup_error:
            with _recording(tracer, "ref"):
                solution_error = run_code(solution, ref, SOLUTION, "solution")
    code_error = None
    guard = None
    left: list = []
    kept: list = []
    if setup_error is None:
        # The learner's own prints stream as usual (the engine caps a flood).
        seed_all(seed)
        with reads["learner"].recording():
            setup_error = run_code(setup, learner, SETUP, "setup")
        if setup_error is None:
            guard = Snapshot(library) if library is not None else None
            stage("code")
            before = untouched.marks(learner)
            bound = setupnames.kept(learner, keep)
            with _recording(tracer, "learner"), reads["learner"].recording():
                code_error = run_code(code, learner, YOUR_CODE, "code")
            if keep:  # set after the code ran: it never sees them
                learner[setupnames.SETUP_KEY] = bound
            left = untouched.untouched(learner, before)
            kept = untouched.kept_values(learner, before)
            if guard is not None:
                guard.verify("while it ran")
    stage("checks")

    ctx = Context(learner, ref, device, seed, code_error, solution_error)
    ctx.tracer = tracer
    ctx.code, ctx.solution = code, solution  # source checks read them
    ctx.untouched, ctx.kept = set(left), set(kept)
    ctx.reads = reads
    result = evaluate(payload, ctx, setup_error, quiet, guard=guard, stage=stage)
    # A pass must hold on other data too (see judge.run, which does the same across kernels).
    alike: list[bool] = []
    for number, spec in enumerate(payload.get("worlds") or [], 2):
        if not result.get("passed") or not isinstance(spec, dict):
            break
        result = _in_world(payload, spec, number, device, quiet, guard, ref, alike) or result
    if result.get("passed") and alike and all(alike):
        result["worlds_alike"] = True
    return result


def _in_world(payload: dict, spec: dict, number: int, device, quiet, guard, first: dict, alike: list) -> dict | None:
    setup, seed, variant = world_setup(payload, spec)
    code, solution = payload.get("code") or "", payload.get("solution") or ""
    ref, learner = new_namespace(device), new_namespace(device, payload.get("module"))
    with captured(quiet):  # the learner's code already printed once, in the first world
        seed_all(seed)
        keep = setupnames.of_payload(payload)
        setup_error = run_reference_setup(setup, ref, payload.get("judge_setup") or "", keep)
        solution_error = code_error = None
        if setup_error is None:
            solution_error = run_code(solution, ref, SOLUTION, "solution")
            seed_all(seed)
            setup_error = run_code(setup, learner, SETUP, "setup")
            if setup_error is None:
                bound = setupnames.kept(learner, keep)
                code_error = run_code(code, learner, YOUR_CODE, "code")
                if keep:
                    learner[setupnames.SETUP_KEY] = bound
    if guard is not None:
        guard.verify("while it ran again on other data")
    ctx = Context(learner, ref, device, seed, code_error, solution_error)
    ctx.code, ctx.solution = code, solution
    ctx.input_shift = INPUT_SHIFT * (number - 1)
    alike.append(worlds_alike(first, ref, list(payload.get("checks") or [])))
    result = evaluate({**payload, "device_run": False}, ctx, setup_error, quiet, guard=guard)
    if result.get("passed"):
        return None
    if setup_error is not None or solution_error is not None:
        # The exercise's own code failed on that data: nothing to say about the learner's.
        return broken_in_world(result, seed, variant, number)
    return on_other_data(result, seed, variant, number, payload)


def evaluate(payload: dict, ctx: Context, setup_error, quiet, *, guard=None, stage=None, device_run=None) -> dict:
    """Every check and mistake of ``payload`` on ``ctx``, then the diagnosis and the device
    run: the part of a verification after the code ran, wherever the learner's values live
    (this process, or the learner's kernel as seen by the judge)."""
    stage = stage or (lambda name: None)
    checks = list(payload.get("checks") or [])
    mistakes = list(payload.get("mistakes") or [])
    code, solution = ctx.code, ctx.solution
    code_error, solution_error = ctx.code_error, ctx.solution_error
    results = []
    for index, check in enumerate(checks):
        ctx.segment = index
        if setup_error is not None:
            results.append(
                _not_run(
                    check, "not checked: the exercise's setup code failed (a problem in the exercise, not in your code)"
                )
            )
            continue
        with captured(quiet):  # a function check calls the learner's function dozens of times
            results.append(run_check(check, ctx))
    _unauthored_common_raises(checks, results, code_error)

    error = setup_error or solution_error or code_error
    failing = error is not None or not all(r["passed"] for r in results)

    def authored(failed_ids: set) -> list:
        """[(message, id)] of the authored mistakes that match: advice for a failing attempt
        only (a verdict shows none on a pass), so a passing one never evaluates their
        conditions, each a call of the learner's code (a round trip to its kernel)."""
        if setup_error is not None:
            return []
        ctx.segment = MISTAKES  # their conditions' calls are not a check's: never diffed
        with captured(quiet):
            return matched_messages(mistakes, ctx, code, failed_ids)

    failed_ids = {r["id"] for r in results if not r["passed"] and r["id"]}
    messages = authored(failed_ids) if failing else []  # [(message, id)]
    # The product's own diagnosis speaks only when no authored mistake did, only when
    # something failed, and not where a failing check already says the same. Where only
    # rules on the text failed (every value matched), the rule's sentence is the whole story:
    # a cause read from the values or the trace would explain a difference that is not there.
    only_rules = (
        failing
        and error is None
        and all(c.get("kind") == "source" for c, r in zip(checks, results, strict=False) if not r["passed"])
    )
    if not messages and failing and not only_rules and setup_error is None and solution_error is None:
        said = " ".join(r["message"] for r in results if not r["passed"])
        with captured(quiet):
            unchanged = [
                str(c.get("expr")).strip()
                for c, r in zip(checks, results, strict=False)
                if not r["passed"] and str(c.get("expr") or "").strip() in ctx.untouched
            ]
            kept = [
                str(c.get("expr")).strip()
                for c, r in zip(checks, results, strict=False)
                if not r["passed"] and str(c.get("expr") or "").strip() in ctx.kept - ctx.untouched
            ]
            exprs = [str(c.get("expr") or "") for c, r in zip(checks, results, strict=False) if not r["passed"]]
            found = diagnose(ctx, results, code, solution, unchanged, exprs, kept)
            messages = [(m, i) for m, i in found if m not in said]
    passed = error is None and all(r["passed"] for r in results)
    # The device run repeats setup and code: only when the first run left room in the limit.
    room = _monotonic() - payload.get("_started", _monotonic()) < DEVICE_RUN_SHARE * float(
        payload.get("time_limit") or 1e9
    )
    if passed and payload.get("device_run") and ctx.device.type == "cpu" and room:
        stage("device")
        results = _with_device_run(payload, results, checks, device_run, ctx.reads)
        if not all(r["passed"] for r in results):
            # The device run failed it: the conditions as they were met before it ran (its
            # failures are not the checks' own, which passed); where none holds, what the
            # error it raised is known to mean (tensors on two devices).
            messages = authored(set())
            for r in results if not messages else []:
                meaning = signatures.for_error(found_text(r)) if not r["passed"] else None
                if meaning and all(meaning != m for m, _ in messages):
                    messages.append((meaning, None))
    if guard is not None:
        guard.verify("while the checks ran it")
    results = _tests_as_checks(results, checks)
    return jsonable(
        {
            "passed": error is None and all(r["passed"] for r in results),
            "error": error.as_dict() if error else None,
            "checks": results,
            "mistakes": [m for m, _ in messages],
            "mistake_ids": [i for _, i in messages],
        }
    )


def _tests_as_checks(results: list, checks: list) -> list:
    """Each test of a pytest check reported as a check of its own (kinds/testfile.py), the
    author's message before the first failing one."""
    out = []
    for index, result in enumerate(results):
        tests = (result.get("details") or {}).get("tests") if result.get("kind") == "pytest" else None
        if not isinstance(tests, list) or not tests:
            out.append(result)
            continue
        check = checks[index] if index < len(checks) else {}
        authored = (check.get("message") or "").strip()
        for test in tests:
            message = test["message"]
            if authored and not test["passed"]:
                message, authored = f"{authored}\n{message}", ""
            out.append(
                {
                    # The check's id (or its place) first: the host tells the lines of each check apart by it.
                    "id": f"{result.get('id') or f'pytest-{index + 1}'}::{test['name']}",
                    "kind": "pytest",
                    "passed": bool(test["passed"]),
                    "expected": None,
                    "actual": None,
                    "message": message,
                    "details": {"test": test["name"], "outcome": test["outcome"], "check": result.get("id")},
                }
            )
    return out


def _with_device_run(payload: dict, results: list, checks: list, learner_run=None, reads=None) -> list:
    """The normal run passed on the CPU: fail the checks that a GPU would fail (devicerun.py)."""
    results = [dict(r) for r in results]
    for index, sentence in device_problems(payload, results, checks, learner_run, reads):
        if index is None:
            results.append(
                {
                    "id": "device-run",
                    "kind": "device",
                    "passed": False,
                    "expected": None,
                    "actual": None,
                    "message": sentence,
                    "details": {"device_run": True},
                }
            )
        else:
            results[index].update(passed=False, message=sentence, details={"device_run": True})
    return results


_warm = False  # this process (or the fork server it was forked from) has paid the CPU costs


def warm_up(device=None) -> None:
    global _warm
    if not _warm:
        _warm_cpu()
        _warm = True
    if device is not None and torch.device(device).type in ("cuda", "mps"):
        _warm_accelerator(torch.device(device))


def _warm_cpu() -> None:
    import io

    x = torch.ones(2, 3, device="meta")
    (x * 2 + x.sum(0)).reshape(-1)
    buffer = io.BytesIO()
    torch.save({"w": torch.ones(2)}, buffer)
    buffer.seek(0)
    torch.load(buffer, weights_only=True)


def _warm_accelerator(device) -> None:
    # A GPU's first operations create its context and load cuBLAS and cuDNN: seconds, which
    # every verification (always a fresh kernel) would otherwise pay before its first line.
    a = torch.ones(8, 8, device=device, requires_grad=True)
    torch.nn.functional.linear(a, a).sum().backward()
    torch.nn.functional.batch_norm(a.detach(), None, None, training=True)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()
