"""Markdown whose code blocks wrap to the pane's width instead of being cut.

Textual's fences scroll sideways, but nothing can focus them, so a long setup line or a
comment holding the expected output (at the end of a line, exactly where 80 columns cut)
was out of reach from the keyboard. Here each code line longer than the pane is broken
into rows, every continuation row starting with the same mark the Output pane uses.
"""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Label, Markdown
from textual.widgets._markdown import MarkdownFence

from tutor.app.widgets.output_log import CONTINUATION, MIN_WRAP_WIDTH


def wrap_content(content: Content, width: int) -> Content:
    """``content`` (highlighted code) with lines longer than ``width`` cells wrapped."""
    if width < MIN_WRAP_WIDTH:
        return content
    mark = Content.styled(CONTINUATION, "dim")
    rows: list[Content] = []
    for line in content.split("\n", allow_blank=True):
        if line.cell_length <= width:
            rows.append(line)
            continue
        room, first = width, True
        while line.cell_length > room:
            head, line = line[:room], line[room:]
            rows.append(head if first else mark + head)
            room, first = width - len(CONTINUATION), False
        rows.append(mark + line)
    return Content("\n").join(rows)


class WrappedFence(MarkdownFence):
    DEFAULT_CSS = """
    WrappedFence { overflow-x: hidden; }
    """

    _wrapped_at = 0

    def _code_width(self) -> int:
        labels = list(self.query(Label))
        gutter = labels[0].styles.gutter.width if labels else 4
        return self.size.width - gutter

    def _show(self) -> None:
        width = self._code_width()
        self._wrapped_at = width
        content = wrap_content(self._highlighted_code, width)
        for label in self.query(Label):
            label.update(content)

    def set_content(self, content: Content) -> None:
        self._content = content
        self._show()

    def on_resize(self) -> None:
        if self._code_width() != self._wrapped_at:
            self._show()


class LessonMarkdown(Markdown):
    BLOCKS = {**Markdown.BLOCKS, "fence": WrappedFence, "code_block": WrappedFence}
