"""The check-results panel: a verdict as the learner reads it.

Mistakes lead (they say what went wrong in the learner's terms), then one line per check,
failing ones first, with expected vs actual where the check gave them, then the learner's
own traceback.

While a check runs the panel shows how long it has been running and the last lines the
learner's code printed in the verification kernel, redrawn on a timer (``tick``).
"""

from __future__ import annotations

import time
from collections import deque

from textual.containers import VerticalScroll
from textual.content import Content
from textual.widgets import Static

from tutor.engine.events import OutputEvent, StreamEvent
from tutor.grading.verdict import Verdict

LIVE_LINES = 200  # the last lines of output kept while a check runs
LIVE_LINE_CHARS = 500

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
    for check in verdict.shown_checks():  # hidden ones are counted below, never described
        mark = ("✓ ", "$text-success") if check.passed else ("✗ ", "bold $text-error")
        parts += [mark, _without_mark(check.message) or check.id or check.kind, "\n"]
        if not check.passed:
            if check.expected is not None:
                parts += [("    expected: ", "$text-muted"), check.expected, "\n"]
            if check.actual is not None:
                parts += [("    actual:   ", "$text-muted"), check.actual, "\n"]
    for sign, text in verdict.hidden_rows():
        parts += [(sign + " ", "bold $text-error" if sign == "✗" else "$text-success"), text, "\n"]
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
    _started: float | None = None  # monotonic start of the check running, if one is
    _live: deque[str]
    _partial = ""

    def compose(self):
        yield Static("Press ctrl+t to check your code against the exercise.", id="verdict")

    def show_message(self, text: str, style: str = "$text-muted") -> None:
        self.verdict = None
        self._started = None
        self.query_one("#verdict", Static).update(Content.assemble((text, style)))

    # ------------------------------------------------------------ a check running

    def start_progress(self, started: float) -> None:
        self.verdict = None
        self._started = started
        self._live = deque(maxlen=LIVE_LINES)
        self._partial = ""
        self.tick()

    def feed(self, event: OutputEvent) -> None:
        """An engine event from the verification kernel: the learner's prints are kept."""
        if self._started is None or not isinstance(event, StreamEvent):
            return
        *lines, self._partial = (self._partial + event.text).split("\n")
        self._live.extend(line[:LIVE_LINE_CHARS] for line in lines)
        self._partial = self._partial[:LIVE_LINE_CHARS]

    def tick(self) -> None:
        if self._started is None:
            return
        seconds = int(time.monotonic() - self._started)
        parts: list = [
            (f"Checking your code in a fresh kernel… {seconds} s", "$text-accent"),
            ("  (f6 or ctrl+c stops the check)", "$text-muted"),
            "\n",
        ]
        shown = [*self._live, self._partial] if self._partial else list(self._live)
        if shown:
            parts += [("\nYour code printed:\n", "$text-muted"), "\n".join(shown)]
        self.query_one("#verdict", Static).update(Content.assemble(*parts))
        if shown:
            self.scroll_end(animate=False)

    def show_verdict(self, verdict: Verdict) -> None:
        self.verdict = verdict
        self._started = None
        self.query_one("#verdict", Static).update(verdict_content(verdict))
        self.scroll_home(animate=False)
