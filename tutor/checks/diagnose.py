"""What the product itself says when checks fail and no authored mistake matched: the
first difference of the protocol traces, built-in signatures found by the checks, by
comparing both namespaces, and in the exception messages, each said once."""

from . import errorcause, signatures, tracediff
from .scan import compare_namespaces


def _error_texts(ctx, results) -> list:
    texts = []
    if ctx.code_error is not None:
        texts.append(f"{ctx.code_error.ename}: {ctx.code_error.evalue}")
    for r in results:
        if not r["passed"]:
            texts.append(r.get("message") or "")
            texts.extend((r.get("details") or {}).get("traceback") or [])
    return texts


def diagnose(ctx, results, code: str, solution: str) -> list:
    """[(sentence, id)] for the result's ``mistakes``, most explanatory first; the id is
    ``auto:TOPIC`` where the sentence has a topic, else None (the host names it)."""
    found: list = []  # (sentence, topic)
    if ctx.code_error is not None:
        cause = errorcause.sentence(ctx.code_error.context, ctx.code_error.ename)
        if cause:
            found.append((cause, None))
    if ctx.tracer is not None:
        finding_topics = set(ctx.topics.values())
        # After a crash the learner's trace stops early: its run says nothing about the protocol.
        skip = ("run",) if ctx.code_error is not None else ()
        for sentence, topic in tracediff.differences(ctx.tracer, skip):
            # "backward() ran twice" is what "x.grad is 2x the expected gradient" says better
            if not (topic == "backward_count" and "zero_grad" in finding_topics):
                found.append((sentence, topic))
    forward = tracediff.direct_forward(code, solution)
    if forward:
        found.append((forward, None))
    topics = {t for _, t in found if t}
    for f in ctx.findings:
        if ctx.topics.get(f) not in topics or ctx.topics.get(f) is None:
            found.append((f, ctx.topics.get(f)))
    backward_calls = 0
    if ctx.tracer is not None:
        backward_calls = sum(e.kind == "backward" for e in ctx.tracer.events("learner"))
    for sentence in compare_namespaces(ctx.learner, ctx.ref, backward_calls):
        found.append((sentence, None))
    for text in _error_texts(ctx, results):
        explanation = signatures.for_error(text)
        if explanation:
            found.append((explanation, None))
    out: list = []
    for sentence, topic in found:
        if all(sentence != said for said, _ in out):
            out.append((sentence, f"auto:{topic}" if topic else None))
    return out
