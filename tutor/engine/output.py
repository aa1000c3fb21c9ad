"""A capped output buffer: the learner's prints, bounded in memory however much is printed.

Keeps the first ``head_lines`` lines (streamed live as they arrive) and a rolling window of
the last ``tail_lines`` lines; everything between is only counted. When the run ends, the
count is reported once (an OmittedEvent and the "… N lines omitted …" marker in the text)
followed by the kept tail. Single lines are cut at ``max_line_chars`` so one enormous line
(a huge list printed without newlines) cannot blow the cap either.
"""

from __future__ import annotations

import re
from collections import deque

from tutor.engine.events import DisplayEvent, OmittedEvent, OutputEvent, StreamEvent

HEAD_LINES = 2000
TAIL_LINES = 200
MAX_LINE_CHARS = 10_000
MAX_LIVE_LINE_CHARS = 100_000  # raw text streamed per line, "\r" rewrites included
HEAD_CHARS = 1_000_000
MAX_TEXT_PLAIN = 200_000  # a text/plain value (e.g. Out[n] of a huge list) is cut here
DISPLAYS_KEPT = 100  # first and last N display bundles of a run
DISPLAY_BYTES = 32 << 20  # and at most this much of them, first and last (half each)
# The largest message taken from a kernel. A bigger one (one print of half a gigabyte, a
# huge display bundle) is refused by zmq before it is read, so the host never holds it:
# the channel is connected again and the run says that output was dropped (connection.py).
MAX_MESSAGE_BYTES = 16 << 20

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def omitted_marker(lines: int) -> str:
    return f"… {lines} lines omitted …\n"


def cut_text(text: str, limit: int = MAX_TEXT_PLAIN) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… {len(text) - limit} characters omitted …"


def cap_bundle(data: dict) -> dict:
    """A display bundle with an oversized text/plain cut; other mime types stay intact
    (grading publishes its verdict as a custom mime type)."""
    text = data.get("text/plain")
    if isinstance(text, str) and len(text) > MAX_TEXT_PLAIN:
        data = dict(data)
        data["text/plain"] = cut_text(text)
    return data


def bundle_size(data: dict) -> int:
    """About how many characters a display bundle holds (its text values, one level into
    a JSON value such as the checker's answers)."""
    size = 0
    for value in data.values():
        if isinstance(value, str):
            size += len(value)
        elif isinstance(value, dict):
            size += sum(len(v) if isinstance(v, str) else 64 for v in value.values())
        else:
            size += 64
    return size


class _Line:
    """The line being written. Streams the raw text live (cut at a cap) and stores what a
    terminal would show: a carriage return restarts the line, as progress bars expect."""

    __slots__ = ("dropped", "name", "streamed", "text")

    def __init__(self, name: str):
        self.name = name
        self.text = ""
        self.dropped = 0
        self.streamed = 0

    def add(self, piece: str) -> str:
        """Append a piece; returns the part to stream live."""
        newline = piece.endswith("\n")
        body = piece[:-1] if newline else piece
        live_room = MAX_LIVE_LINE_CHARS - self.streamed
        live = body[: max(live_room, 0)]
        self.streamed += len(live)
        if "\r" in body.rstrip("\r"):
            self.text = ""
            self.dropped = 0
            body = body.rsplit("\r", 1)[-1]
        room = MAX_LINE_CHARS - len(self.text)
        if len(body) > room:
            self.dropped += len(body) - max(room, 0)
            body = body[: max(room, 0)]
        self.text += body
        return live + ("\n" if newline else "")

    def finish(self, complete: bool) -> str:
        note = f" … ({self.dropped} characters omitted)" if self.dropped else ""
        return self.text.rstrip("\r") + note + ("\n" if complete else "")


class OutputBuffer:
    """Collects one run's stdout/stderr and display bundles with bounded memory."""

    def __init__(self, head_lines: int = HEAD_LINES, tail_lines: int = TAIL_LINES, head_chars: int = HEAD_CHARS):
        self.head_lines = head_lines
        self.tail_lines = tail_lines
        self.head_chars = head_chars
        self._head: list[str] = []  # finished lines, "\n" included
        self._head_count = 0
        self._head_size = 0
        self._tail: deque[tuple[str, str]] = deque()  # (stream name, finished line)
        self._line: _Line | None = None  # the unfinished line, head or tail
        self._in_tail = False
        self.omitted = 0
        self.displays: list[DisplayEvent] = []
        self._late_displays: deque[DisplayEvent] = deque()
        self._late_sizes: deque[int] = deque()  # each late bundle's bundle_size
        self._early_bytes = self._late_bytes = 0
        self.omitted_displays = 0
        self._finished = False

    # ---- streams

    def add_stream(self, name: str, text: str) -> list[OutputEvent]:
        """Take a chunk of a stream; returns the events to deliver now."""
        if not text:
            return []
        parts = text.split("\n")  # all but the last end a line
        last = len(parts) - 1
        live: list[str] = []
        i = 0
        while i <= last and not self._in_tail:
            newline = i < last
            if parts[i] or newline:
                line = self._line
                if line is not None and line.name != name:
                    # Another stream interleaves mid-line: close the open line as it is.
                    self._close_line(complete=False)
                    line = None
                if line is None:
                    line = self._line = _Line(name)
                live.append(line.add(parts[i] + ("\n" if newline else "")))
                if newline:
                    self._close_line(complete=True)
            i += 1
        if i <= last:
            self._add_tail(name, parts[i:])
        shown = "".join(live)
        return [StreamEvent(name, shown)] if shown else []  # type: ignore[arg-type]

    def _add_tail(self, name: str, parts: list[str]) -> None:
        """Past the head: keep only the last lines, in bulk (a flood is mostly this path)."""
        if len(parts) == 1:
            if parts[0]:
                self._open(name).add(parts[0])
            return
        self._open(name).add(parts[0] + "\n")
        self._close_line(complete=True)
        middle = parts[1:-1]
        if len(middle) >= self.tail_lines:
            self.omitted += len(self._tail) + len(middle) - self.tail_lines
            self._tail.clear()
            middle = middle[len(middle) - self.tail_lines :]
        for part in middle:
            line = _Line(name)
            line.add(part + "\n")
            self._line = line
            self._close_line(complete=True)
        if parts[-1]:
            self._open(name).add(parts[-1])

    def _close_line(self, complete: bool) -> None:
        line = self._line
        self._line = None
        if line is None:
            return
        text = line.finish(complete)
        if not self._in_tail:
            self._head.append(text)
            self._head_count += 1
            self._head_size += len(text)
            if self._head_count >= self.head_lines or self._head_size >= self.head_chars:
                self._in_tail = True
            return
        self._tail.append((line.name, text))
        if len(self._tail) > self.tail_lines:
            self._tail.popleft()
            self.omitted += 1

    def _open(self, name: str) -> _Line:
        if self._line is None:
            self._line = _Line(name)
        return self._line

    # ---- displays

    def add_display(self, event: DisplayEvent) -> bool:
        """Keep a display bundle; False when it is not shown now (past the first N or the
        first half of DISPLAY_BYTES: then kept among the last N, within the other half)."""
        size = bundle_size(event.data)
        half = DISPLAY_BYTES // 2
        if not self._late_sizes and len(self.displays) < DISPLAYS_KEPT and self._early_bytes + size <= half:
            self.displays.append(event)
            self._early_bytes += size
            return True
        self._late_displays.append(event)
        self._late_sizes.append(size)
        self._late_bytes += size
        while self._late_displays and (len(self._late_displays) > DISPLAYS_KEPT or self._late_bytes > half):
            self._late_displays.popleft()
            self._late_bytes -= self._late_sizes.popleft()
            self.omitted_displays += 1
        return False

    # ---- end of run

    def finish(self) -> list[OutputEvent]:
        """Close the run: the omitted-lines notice and the kept tail, as events."""
        if self._finished:
            return []
        self._finished = True
        events: list[OutputEvent] = []
        if self._line is not None:
            self._close_line(complete=False)
        if self.omitted:
            events.append(OmittedEvent(self.omitted))
        name, chunk = None, []
        for stream, text in self._tail:
            if name is not None and stream != name and chunk:
                events.append(StreamEvent(name, "".join(chunk)))  # type: ignore[arg-type]
                chunk = []
            name = stream
            chunk.append(text)
        if chunk:
            events.append(StreamEvent(name, "".join(chunk)))  # type: ignore[arg-type]
        self.displays.extend(self._late_displays)
        self._late_displays.clear()
        self._late_sizes.clear()
        return events

    def text(self) -> str:
        """stdout+stderr as the learner sees it, with the marker where lines were dropped."""
        parts = list(self._head)
        if self._line is not None and not self._in_tail:
            parts.append(self._line.finish(complete=False))
        if self.omitted:
            if parts and not parts[-1].endswith("\n"):
                parts.append("\n")
            parts.append(omitted_marker(self.omitted))
        parts.extend(text for _, text in self._tail)
        if self._line is not None and self._in_tail:
            parts.append(self._line.finish(complete=False))
        return "".join(parts)

    @property
    def total_lines(self) -> int:
        return self._head_count + self.omitted + len(self._tail)
