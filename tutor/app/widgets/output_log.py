"""The output pane: what the learner's code prints, streamed as it arrives.

Built on textual's Log, which renders only the visible lines. Text is batched and written
a few times a second, whole lines at a time (Log.write refreshes once per line, which
freezes the UI on a flood; write_lines refreshes once per batch). Both the pending text
and the kept lines are capped (the engine caps each run as well; this guards the view).
"""

from __future__ import annotations

import textwrap
import time

from textual.widgets import Log

from tutor.engine.events import DisplayEvent, ErrorEvent, OmittedEvent, StateEvent, StreamEvent

FLUSH_SECONDS = 1 / 20
MAX_LINES = 5_000  # lines kept in the view; older ones scroll away
MAX_PENDING_CHARS = 200_000  # text waiting for the next flush; the rest is counted, not kept
PARTIAL_SHOWN_AFTER = 1.0  # an unfinished line ("Loading..." then a long wait) shows after this


class OutputLog(Log):
    """A Log fed from any callback with ``feed``; it flushes on a timer."""

    DEFAULT_CSS = """
    OutputLog { background: $surface; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(max_lines=MAX_LINES, auto_scroll=True, id=id, classes=classes)
        self._pending: list[str] = []
        self._pending_chars = 0
        self._partial = ""  # the unfinished last line, not yet in the Log
        self._partial_since = 0.0
        self._dropped_lines = 0
        self._last_note: str | None = None  # the engine may report one event twice (live, then in the result)
        self.can_focus = True

    def on_mount(self) -> None:
        self.set_interval(FLUSH_SECONDS, self.flush, name="output-flush")

    def feed(self, text: str) -> None:
        """Queue ``text`` for the next flush (cheap: safe to call for every chunk)."""
        if not text:
            return
        if self._pending_chars + len(text) > MAX_PENDING_CHARS:
            # The view cannot keep up with this flood: count what we drop and say so.
            self._dropped_lines += text.count("\n")
            return
        self._pending.append(text)
        self._pending_chars += len(text)
        self._last_note = None

    def show_event(self, event) -> None:
        """One engine event (tutor.engine.events) as the learner reads it."""
        if isinstance(event, StreamEvent):
            self.feed(event.text)
        elif isinstance(event, DisplayEvent):
            text = event.data.get("text/plain")
            if text:
                self.feed(("Out: " if event.is_result else "") + text.rstrip("\n") + "\n")
        elif isinstance(event, ErrorEvent):
            self.feed("\n".join(event.traceback).rstrip("\n") + "\n")
        elif isinstance(event, OmittedEvent):
            self.note(f"… {event.lines} lines omitted …" if event.lines else "… output omitted …")
        elif isinstance(event, StateEvent) and event.message:
            self.note(event.message)

    def note(self, line: str) -> None:
        """A line from the tutor itself (not the learner's output), on its own line."""
        if line == self._last_note:
            return
        self.flush(final=True)
        self._last_note = line
        # Log does not wrap; our own sentences should be readable without scrolling sideways.
        width = max(30, self.scrollable_content_region.width - 1)
        lines: list[str] = []
        for part in line.rstrip("\n").split("\n"):
            lines += textwrap.wrap(part, width) or [""]
        self.write_lines(lines)

    def flush(self, final: bool = False) -> None:
        """Write what is pending, whole lines only; ``final`` writes the unfinished line too."""
        lines: list[str] = []
        if self._pending:
            text = self._partial + "".join(self._pending)
            self._pending.clear()
            self._pending_chars = 0
            *lines, rest = text.split("\n")
            if rest != self._partial or lines:
                self._partial_since = time.monotonic()
            self._partial = rest
        if self._partial and (final or time.monotonic() - self._partial_since > PARTIAL_SHOWN_AFTER):
            lines.append(self._partial)
            self._partial = ""
        if self._dropped_lines:
            lines.append(f"… {self._dropped_lines} lines not shown (output too fast) …")
            self._dropped_lines = 0
        if lines:
            self.write_lines(lines)

    def reset(self) -> None:
        self._pending.clear()
        self._pending_chars = 0
        self._partial = ""
        self._dropped_lines = 0
        self._last_note = None
        self.clear()
