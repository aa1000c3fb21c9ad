"""The output pane: what the learner's code prints, streamed as it arrives.

Built on textual's Log, which renders only the visible lines. Text is batched and written
a few times a second, whole lines at a time (Log.write refreshes once per line, which
freezes the UI on a flood; write_lines refreshes once per batch). Both the pending text
and the kept lines are capped (the engine caps each run as well; this guards the view).

Log does not wrap, and a traceback's last line is where PyTorch gives its advice: lines
are wrapped here to the pane's width, each continuation row starting with a mark, and
wrapped again from the kept lines when the pane's width changes.

A figure (an image/png display bundle, e.g. matplotlib's inline backend) is announced in
the text and handed on as a ``FigureShown`` message for the figure pane beside the log.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

from rich.cells import cell_len
from textual.message import Message
from textual.widgets import Log

from tutor.engine.events import DisplayEvent, ErrorEvent, OmittedEvent, OutputEvent, StateEvent, StreamEvent

FLUSH_SECONDS = 1 / 20
MAX_LINES = 5_000  # lines kept in the view; older ones scroll away
MAX_PENDING_CHARS = 200_000  # text waiting for the next flush; the rest is counted, not kept
PARTIAL_SHOWN_AFTER = 1.0  # an unfinished line ("Loading..." then a long wait) shows after this
CONTINUATION = "↪ "  # starts each row that continues a wrapped line
MIN_WRAP_WIDTH = 20  # narrower than this (not laid out yet) nothing is wrapped


def wrap_line(line: str, width: int) -> list[str]:
    """``line`` as rows of at most ``width`` cells; rows after the first start with the
    continuation mark. Breaks after a space when one is near the end of the row."""
    line = line.expandtabs(8)
    if width < MIN_WRAP_WIDTH or cell_len(line) <= width:
        return [line]
    rows: list[str] = []
    rest = line
    room = width
    while cell_len(rest) > room:
        cut, used = 0, 0
        for ch in rest:  # the longest prefix that fits, in cells (wide characters count 2)
            w = cell_len(ch)
            if used + w > room:
                break
            used += w
            cut += 1
        space = rest.rfind(" ", 0, cut)
        if space >= cut * 2 // 3:
            cut = space + 1
        rows.append(rest[:cut])
        rest = rest[cut:]
        room = width - len(CONTINUATION)
    rows.append(rest)
    return [rows[0]] + [CONTINUATION + row for row in rows[1:]]


class OutputLog(Log):
    """A Log fed from any callback with ``feed``; it flushes on a timer."""

    @dataclass
    class FigureShown(Message):
        """A figure arrived: ``png`` is the base64 text of the bundle's image/png."""

        png: str
        number: int

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
        self._kept: deque[str] = deque(maxlen=MAX_LINES)  # the lines as written, before wrapping
        self._wrapped_at = 0  # the width the rows in the Log were wrapped to
        self.figures = 0  # figures shown since the last reset
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

    def show_event(self, event: OutputEvent) -> None:
        """One engine event (tutor.engine.events) as the learner reads it."""
        if isinstance(event, StreamEvent):
            self.feed(event.text)
        elif isinstance(event, DisplayEvent):
            png = event.data.get("image/png")
            if isinstance(png, str) and png:
                self.figures += 1
                self.note(f"[figure {self.figures}: shown beside this text; ctrl+p 'figure' enlarges it]")
                self.post_message(self.FigureShown(png, self.figures))
                return
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
        self._write(line.rstrip("\n").split("\n"))

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
            self._write(lines)

    # ------------------------------------------------------------ wrapping

    @property
    def text(self) -> str:
        """What was written, as lines before wrapping (the last MAX_LINES)."""
        return "\n".join(self._kept)

    def _wrap_width(self) -> int:
        return self.scrollable_content_region.width - 1  # a column for the scrollbar that may appear

    def _write(self, lines: list[str]) -> None:
        self._kept.extend(lines)
        width = self._wrap_width()
        if width != self._wrapped_at and self._wrapped_at:
            self._rewrap()
            return
        self._wrapped_at = width
        self.write_lines([row for line in lines for row in wrap_line(line, width)])

    def _rewrap(self) -> None:
        width = self._wrap_width()
        self._wrapped_at = width
        at_end = self.is_vertical_scroll_end
        super().clear()
        self.write_lines([row for line in self._kept for row in wrap_line(line, width)], scroll_end=at_end)

    def on_resize(self) -> None:
        if self._kept and self._wrap_width() != self._wrapped_at:
            self._rewrap()

    def reset(self) -> None:
        self._pending.clear()
        self._pending_chars = 0
        self._partial = ""
        self._dropped_lines = 0
        self._last_note = None
        self._kept.clear()
        self.figures = 0
        self.clear()
