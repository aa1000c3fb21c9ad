"""The output pane: what the learner's code prints, streamed as it arrives.

Built on textual's Log, which renders only the visible lines. Text is batched and written
a few times a second, so a run that prints a million lines costs the UI a handful of
writes, and both the pending text and the kept lines are capped (the engine caps each
run as well; this guards the view).
"""

from __future__ import annotations

import textwrap

from textual.widgets import Log

from tutor.engine.events import DisplayEvent, ErrorEvent, OmittedEvent, StateEvent, StreamEvent

FLUSH_SECONDS = 1 / 20
MAX_LINES = 5_000  # lines kept in the view; older ones scroll away
MAX_PENDING_CHARS = 200_000  # text waiting for the next flush; the rest is counted, not kept


class OutputLog(Log):
    """A Log fed from any callback with ``feed``; it flushes on a timer."""

    DEFAULT_CSS = """
    OutputLog { background: $surface; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(max_lines=MAX_LINES, auto_scroll=True, id=id, classes=classes)
        self._pending: list[str] = []
        self._pending_chars = 0
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

    def note(self, line: str) -> None:
        """A line from the tutor itself (not the learner's output), on its own line."""
        if line == self._last_note:
            return
        self._last_note = line
        self.flush()
        if self.lines and self.lines[-1] != "":
            self.write("\n")
        # Log does not wrap; our own sentences should be readable without scrolling sideways.
        width = max(30, self.scrollable_content_region.width - 1)
        text = "\n".join(textwrap.fill(part, width) if part else "" for part in line.rstrip("\n").split("\n"))
        self.write(text + "\n")

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

    def flush(self) -> None:
        if self._pending:
            text = "".join(self._pending)
            self._pending.clear()
            self._pending_chars = 0
            self.write(text)
        if self._dropped_lines:
            dropped, self._dropped_lines = self._dropped_lines, 0
            if self.lines and self.lines[-1] != "":
                self.write("\n")
            self.write(f"… {dropped} lines not shown (output too fast) …\n")

    def reset(self) -> None:
        self._pending.clear()
        self._pending_chars = 0
        self._dropped_lines = 0
        self._last_note = None
        self.clear()
