"""The check-results panel: a verdict as the learner reads it.

Mistakes lead (they say what went wrong in the learner's terms), then one line per check
with expected vs actual where the check gave them, then the learner's own traceback.
"""

from __future__ import annotations

from textual.containers import VerticalScroll
from textual.content import Content
from textual.widgets import Static

from tutor.grading.verdict import Verdict

_STATUS_STYLE = {
    "pass": "bold $text-success",
    "fail": "bold $text-error",
    "error": "bold $text-error",
    "timeout": "bold $text-warning",
    "crashed": "bold $text-warning",
    "authoring-error": "bold $text-warning",
}


def _without_mark(message: str) -> str:
    """Some checks start their message with a mark already; we draw our own."""
    return message[2:] if message[:2] in ("✓ ", "✗ ") else message


def verdict_content(verdict: Verdict) -> Content:
    parts: list = [(verdict.headline, _STATUS_STYLE.get(verdict.status, "bold")), "\n"]
    for message in verdict.mistakes:
        parts += [("→ ", "bold $text-warning"), message, "\n"]
    if verdict.mistakes and verdict.checks:
        parts.append("\n")
    for check in verdict.checks:
        mark = ("✓ ", "$text-success") if check.passed else ("✗ ", "bold $text-error")
        parts += [mark, _without_mark(check.message) or check.id or check.kind, "\n"]
        if not check.passed:
            if check.expected is not None:
                parts += [("    expected: ", "$text-muted"), check.expected, "\n"]
            if check.actual is not None:
                parts += [("    actual:   ", "$text-muted"), check.actual, "\n"]
    if verdict.error:
        parts += ["\n", (verdict.error.rstrip(), "$text-error"), "\n"]
    return Content.assemble(*parts)


class CheckResults(VerticalScroll):
    """Shows the last verdict of the open exercise (or what is happening instead)."""

    DEFAULT_CSS = """
    CheckResults { height: 1fr; padding: 0 1; }
    CheckResults > #verdict { width: 1fr; }
    """

    verdict: Verdict | None = None  # the verdict shown, if any

    def compose(self):
        yield Static("Press ctrl+t to check your code against the exercise.", id="verdict")

    def show_message(self, text: str, style: str = "$text-muted") -> None:
        self.verdict = None
        self.query_one("#verdict", Static).update(Content.assemble((text, style)))

    def show_verdict(self, verdict: Verdict) -> None:
        self.verdict = verdict
        self.query_one("#verdict", Static).update(verdict_content(verdict))
        self.scroll_home(animate=False)
