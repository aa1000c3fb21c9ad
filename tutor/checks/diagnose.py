"""What the product itself says when checks fail and no authored mistake matched: the
first difference of the protocol traces, built-in signatures found by the checks, by
comparing both namespaces, and in the exception messages, each said once."""

import inspect
import re

import torch

from . import (
    arguments,
    copywrites,
    counts,
    edits,
    errorcause,
    signatures,
    sourcefacts,
    swapped,
    tracediff,
    unfilled,
    updates,
    wrongdim,
)
from .scan import compare_namespaces


def found_text(result: dict) -> str:
    """What a check result says it found, without its author's message (runner.run_check)."""
    found = (result.get("details") or {}).get("found")
    return found if isinstance(found, str) else result.get("message") or ""


def _error_texts(ctx, results) -> list:
    texts = []
    if ctx.code_error is not None:
        texts.append(f"{ctx.code_error.ename}: {ctx.code_error.evalue}")
    for r in results:
        if not r["passed"]:
            texts.append(found_text(r))
            details = r.get("details") or {}
            if details.get("raised_text"):
                texts.append(details["raised_text"])
            texts.extend(details.get("traceback") or [])
    return texts


# Sentences of the trace's grad-mode rule that say what the results are (a graph kept, no
# gradient): established only where a failing check is about that, or the code raised.
GRAPH_CLAIMS = ("require grad and keep a graph", "no gradient flows back through it")
GRAPH_PROPERTIES = frozenset({"requires_grad", "grad_fn", "is_leaf", "grad"})
STILL_ATTACHED = "is still part of the graph"  # signatures.still_attached


def _graph_failed(results, ctx) -> bool:
    """Whether the code raised or a failing check found a gradient, requires_grad, grad_fn
    or leaf that differs, or says it is about a gradient or a graph."""
    if ctx.code_error is not None:
        return True

    def found(value, depth: int = 0) -> bool:
        if depth > 6:
            return False
        if isinstance(value, dict):
            if value.get("property") in GRAPH_PROPERTIES:
                return True
            return any(found(v, depth + 1) for v in value.values())
        if isinstance(value, list):
            return any(found(v, depth + 1) for v in value[:200])
        return False

    def about_graph(r) -> bool:  # a check that reads a report of its own ("graph built during a forward")
        # What the check found, not the author's words around it: those may name the fix
        # ("with torch.no_grad(): ...copy_") or a rule ("validated without a graph") that is
        # not what failed.
        details = r.get("details") if isinstance(r.get("details"), dict) else {}
        text = str(details.get("found") or r.get("message") or "").lower()
        text = text.replace("no_grad", "").replace("inference_mode", "")
        return "grad" in text or "graph" in text

    return any(not r.get("passed") and (found(r.get("details")) or about_graph(r)) for r in results)


def diagnose(
    ctx, results, code: str, solution: str, unchanged: list | None = None, failing=(), kept: list | None = None
) -> list:
    """[(sentence, id)] for the result's ``mistakes``, most explanatory first; the id is
    ``auto:TOPIC`` where the sentence has a topic, else None (the host names it).
    ``unchanged``: the failing checks' names the code left exactly as the setup made them;
    ``failing``: the failing checks' expressions; ``kept``: the failing checks' names that end
    with the setup's values, though something else of them (their .grad) changed."""
    found: list = []  # (sentence, topic)
    if ctx.code_error is not None:
        cause = errorcause.sentence(ctx.code_error.context, ctx.code_error.ename, message=ctx.code_error.evalue or "")
        if cause:
            found.append((cause, None))
            dim = wrongdim.sentence(ctx.code_error.context, ctx.code_error.evalue or "", code, solution)
            if dim:
                found.append((dim, None))
    unchanged = unchanged or []
    # After an exception the code may have stopped before the lines that change them: an
    # untouched name then says nothing about what the code does.
    for name in unchanged if ctx.code_error is None else []:
        found.append(
            # Established is the end state, not the history: code may have changed it and changed it back.
            (
                f"{name} is still exactly what the setup made: nothing your code did to it is left, where the "
                "reference leaves it changed (its values, its .grad or whether it requires grad)",
                None,
            )
        )
    kept = [name for name in kept or [] if _values_differ(ctx, name)]
    for name in kept if ctx.code_error is None else []:
        found.append(
            (
                f"{name} still holds exactly the values the setup gave it: no change your code made to its "
                "values is left (an update that went into a copy, one that never ran, or one that applied nothing, "
                "such as a step after its gradient was cleared)",
                None,
            )
        )
    if ctx.tracer is not None:
        finding_topics = set(ctx.topics.values())
        # After a crash the learner's trace stops early: its run says nothing about the protocol.
        skip = ("run",) if ctx.code_error is not None else ()
        failed = {i for i, r in enumerate(results) if not r["passed"]}
        functions = {name for name, value in ctx.ref.items() if inspect.isfunction(value)}
        for sentence, topic in tracediff.differences(ctx.tracer, skip, failed, functions, code):
            if topic == tracediff.TOPIC_GRAD_MODE and unchanged:
                continue  # no work was done on what failed: how it would have been recorded is no cause
            if (
                topic == tracediff.TOPIC_GRAD_MODE
                and sentence.endswith(GRAPH_CLAIMS)
                and not _graph_failed(results, ctx)
            ):
                continue  # what it says of the results (a graph kept, no gradient) is not what failed
            # "backward() ran twice" is what "x.grad is 2x the expected gradient" says better
            if not (topic == "backward_count" and "zero_grad" in finding_topics):
                found.append((sentence, topic))
    source_rules = (
        tracediff.direct_forward,
        tracediff.never_freezes,
        sourcefacts.once_only,
        sourcefacts.fresh_state_each_call,
        sourcefacts.returns_nothing,
        sourcefacts.max_values_for_positions,
    )
    kept_constant = sourcefacts.bound_once(code, solution, ctx.learner, ctx.ref) if ctx.code_error is None else None
    if kept_constant:
        found.append((kept_constant, None))
    for source_rule in source_rules:
        sentence = source_rule(code, solution)
        if sentence:
            found.append((sentence, None))
    # The reference's statements with one edit (a sum for a mean, operands swapped, off by
    # one), with one of them missing, or with one in another place.
    edited = (
        edits.one_edit(code, solution, ctx.learner)
        or edits.one_missing(code, solution)
        or edits.one_extra(code, solution)
        or edits.one_moved(code, solution)
        or edits.one_inverse(code, solution)
    )
    # Else the one place the code differs, unless a sentence already points at that line
    # (the exception it raised there says more).
    for sentence, topic in edited or edits.one_place(code, solution, ctx.learner):
        line = re.match(r"line (\d+) of your code", sentence)
        if edited or line is None or not any(s.startswith(f"line {line.group(1)} of your code") for s, _ in found):
            found.append((sentence, topic))
    if ctx.code_error is None:  # after an exception, what the code never reached says nothing
        found += [(s, None) for s in updates.never_updated(code, solution, list(failing), ctx.learner, unchanged)]
        found += [(s, None) for s in copywrites.lost_writes(code, ctx.learner)]
    topics = {t for _, t in found if t}
    for f in ctx.findings:
        reading = ctx.topics.get(f) == "pattern" or str(ctx.topics.get(f) or "").startswith("cause:")
        if reading and ctx.code_error is not None:
            # The code raised: its names hold what it left half done, so no reading of their
            # values (a factor, a shift) is established; the exception is.
            continue
        if reading and any(f.startswith((f"{name} ", f"{name}[", f"{name}.")) for name in unchanged + kept):
            continue  # nor a reading of a value the code never changed
        if ctx.topics.get(f) not in topics or ctx.topics.get(f) is None:
            found.append((f, ctx.topics.get(f)))
    # A torch call both make once, set otherwise (no momentum, reduction='sum'), unless a
    # sentence already names that line, or that setting of that call (the trace's loader).
    for sentence, callee, settings in arguments.other_settings(code, solution):
        line = re.match(r"line (\d+) of your code", sentence)
        if line is not None and any(s.startswith(f"line {line.group(1)} of your code") for s, _ in found):
            continue
        if any(callee in s and any(f"{name}=" in s for name in settings) for s, _ in found):
            continue
        found.append((sentence, None))
    backward_calls = 0
    if ctx.tracer is not None:
        backward = [e for e in ctx.tracer.events("learner") if e.kind == "backward"]
        # Whether the later calls added onto a gradient still there (the trace looked at the
        # first few): all of them onto cleared gradients, and "never cleared" would be false.
        later = [e.info["stale"] for e in backward[1:] if e.info.get("stale") is not None]
        cleared = bool(later) and not any(later)
        backward_calls = 0 if cleared else len(backward)
    for sentence in compare_namespaces(ctx.learner, ctx.ref, backward_calls, stopped=ctx.code_error is not None):
        if STILL_ATTACHED in sentence and not _graph_failed(results, ctx):
            continue  # a graph the reference's value lacks, where no failing check is about graphs
        found.append((sentence, None))
    raised = ctx.code_error is not None
    found += [(s, None) for s in unfilled.unfilled(ctx.learner, ctx.ref, code, solution, raised)]
    if not raised:  # after an exception the names hold what the code left half done: no reading
        found += [(s, None) for s in counts.counts(ctx.learner, ctx.ref, ctx._count_named)]
        found += [(s, None) for s in swapped.swapped(*_compared(ctx))]
    found += [(e, None) for e in _for_errors(ctx, results)]
    return _unique(found)


def _values_differ(ctx, name: str) -> bool:
    """Whether the learner's tensor ``name`` has the reference's shape and other values (what
    makes "it still holds the setup's values" the cause, not an aside)."""
    mine, theirs = ctx.learner.get(name), ctx.ref.get(name)
    if not isinstance(mine, torch.Tensor) or not isinstance(theirs, torch.Tensor) or mine.shape != theirs.shape:
        return False
    try:
        return not torch.equal(mine.detach().cpu(), theirs.detach().cpu())
    except RuntimeError:
        return False


def _compared(ctx) -> tuple[dict, dict]:
    """The learner's and the reference's values by the name shown: top-level names, and
    what each failing value or tensor check compared (``pad_collate(batch)[0]``)."""
    learner, ref = dict(ctx.learner), dict(ctx.ref)
    for shown, (actual, expected) in ctx.failed_values.items():
        learner[shown], ref[shown] = actual, expected
    return learner, ref


def _for_errors(ctx, results) -> list:
    texts = _error_texts(ctx, results)
    found = [e for e in (signatures.for_error(text) for text in texts) if e]
    found += [e for e in (signatures.pre_hook_arguments(text, ctx.code) for text in texts) if e]
    # The same error read from its first line and from its whole text: the whole says more.
    return [
        e for e in found if not (e in signatures.VAGUE_ERRORS and any(f.startswith(e[:40]) and f != e for f in found))
    ]


def _unique(found: list) -> list:
    out: list = []
    raised: set = set()  # "line 3 of your code, `...`, raised RuntimeError": said once
    for sentence, topic in found:
        where = errorcause.raised_at(sentence)
        if where is not None and where in raised:
            # The same line raising the same exception again (the code's own run, then a
            # check's call on other inputs): the first sentence says it; the values at that
            # point differ only as the inputs do.
            continue
        if all(sentence != said for said, _ in out):
            out.append((sentence, f"auto:{topic}" if topic else None))
            if where is not None:
                raised.add(where)
    return out
