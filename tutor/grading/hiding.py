"""Checks that keep their secrets: a verdict as the learner may see it when some of the
exercise's checks are hidden (docs/trust.md, "Hidden checks").

A hidden check decides without describing. The learner is told that it passed or failed,
counted with the others ("2 hidden checks failed"), and nothing else: not its id or label,
its expected value, its diff or message, the authored mistakes tied to it, nor an automatic
diagnosis (which cannot say which check it speaks for). The visible checks of such an
exercise keep their messages but not the raw reprs of the values they looked at, which
would show what a hidden check of the same value compares. Its expected values never reach the
learner's kernel at all: only the judge holds them (judging.py).
"""

from __future__ import annotations

from dataclasses import replace

from tutor.grading.mistake_ids import AUTO, is_automatic
from tutor.grading.verdict import CheckLine, Verdict
from tutor.packs import models as m

BROKEN = "This exercise is broken: one of its hidden checks could not run. Tell the pack's author."


def conceal(verdict: Verdict, exercise: m.Exercise) -> Verdict:
    """``verdict`` with the exercise's hidden checks reduced to passed or failed."""
    flags = [c.is_hidden for c in exercise.checks]
    if not any(flags):
        return verdict
    hidden_ids = {c.id for c in exercise.checks if c.is_hidden and c.id}
    tied = {mk.stable_id for mk in exercise.mistakes if mk.failed_check in hidden_ids}
    lines: list[CheckLine] = []
    secrets: list[str] = []  # what the hidden checks said, kept out of the headline
    # The verdict's lines follow the exercise's checks (a device run may add one at the end).
    for index, line in enumerate(verdict.checks):
        if index < len(flags) and flags[index]:
            lines.append(CheckLine(id=None, kind="hidden", passed=line.passed, message="", hidden=True))
            secrets += [text for text in (line.id, line.message, line.expected, line.actual) if text]
        else:
            # A visible check's raw reprs show the whole value, also the properties it does
            # not compare (a shape check on a tensor a hidden check compares the values of);
            # its message says what it compares.
            lines.append(replace(line, expected=None, actual=None))
    hidden_failed = any(line.hidden and not line.passed for line in lines)
    ids = verdict.mistake_ids if len(verdict.mistake_ids) == len(verdict.mistakes) else [AUTO] * len(verdict.mistakes)
    kept = [
        (message, mistake_id)
        for message, mistake_id in zip(verdict.mistakes, ids, strict=True)
        if mistake_id not in tied and not (hidden_failed and is_automatic(mistake_id))
    ]
    headline = verdict.headline
    if verdict.status == "authoring-error" and any(text in headline for text in secrets):
        headline = BROKEN
    return replace(
        verdict,
        headline=headline,
        checks=lines,
        mistakes=[message for message, _ in kept],
        mistake_ids=[mistake_id for _, mistake_id in kept],
    )
