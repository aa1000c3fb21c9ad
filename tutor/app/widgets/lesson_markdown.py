"""Markdown whose code blocks wrap to the pane's width instead of being cut.

Textual's fences scroll sideways, but nothing can focus them, so a long setup line or a
comment holding the expected output (at the end of a line, exactly where 80 columns cut)
was out of reach from the keyboard. Here each code line longer than the pane is broken
into rows, every continuation row starting with the same mark the Output pane uses.
"""

from __future__ import annotations

from typing import Any

from textual.await_complete import AwaitComplete
from textual.content import Content
from textual.widgets import Label, Markdown
from textual.widgets.markdown import MarkdownFence

from tutor.app._textual_compat import highlighted_code, keep_fence_content
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
        content = wrap_content(highlighted_code(self), width)
        for label in self.query(Label):
            label.update(content)

    def set_content(self, content: Content) -> None:
        keep_fence_content(self, content)
        self._show()

    def on_resize(self) -> None:
        if self._code_width() != self._wrapped_at:
            self._show()


# Textual lays Markdown out as a widget per block, and per table cell: measured, a table of
# 2,000 rows held the app for 20 s, 1,000 list items for 11 s. Lesson documents are far
# smaller (the built-in ones cost under 80 units below); what does not fit the budget is
# shown as the text it was written as, which lays out at once.
MAX_TABLE_CELLS = 400  # a larger table is shown as text wherever it is
LAYOUT_BUDGET = 600  # units: a block or a cell 1, a list item 4 (about 1.5 s at most)
MAX_TEXT_LINES = 3000  # of what is shown as text


def _cost(token_type: str) -> int:
    if token_type == "list_item_open":
        return 4
    if token_type in ("paragraph_open", "heading_open", "blockquote_open", "th_open", "td_open"):
        return 1
    return 1 if token_type in ("fence", "code_block", "hr", "html_block") else 0


def _as_text(lines: list[str], note: str) -> list[str]:
    shown = lines[:MAX_TEXT_LINES]
    if len(lines) > len(shown):
        shown.append(f"... {len(lines) - len(shown):,} more lines not shown")
    fence = "~~~~" if any(line.lstrip().startswith("~~~") for line in shown) else "```"
    if fence == "```" and any(line.lstrip().startswith("```") for line in shown):
        fence = "````"
    return [f"*{note}*", "", f"{fence}text", *shown, fence]


def bounded_markdown(text: str) -> str:
    """``text`` as Textual can lay it out in a couple of seconds: tables of more than
    ``MAX_TABLE_CELLS`` cells, and everything from the block where the layout budget runs
    out, become code blocks of their own lines, each after a sentence that says so."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("gfm-like").parse(text)
    lines = text.splitlines()
    tables: list[tuple[int, int, int]] = []  # (first line, line after, cells) of big tables
    spent, cut = 0, None
    i = 0
    while i < len(tokens) and cut is None:
        token = tokens[i]
        if token.level != 0 or token.map is None:
            i += 1
            continue
        # One top-level block: its tokens up to the matching close.
        j, depth, cost, cells = i, 0, 0, 0
        while True:
            t = tokens[j]
            depth += t.nesting
            cost += _cost(t.type)
            cells += t.type in ("th_open", "td_open")
            if depth <= 0:
                break
            j += 1
        first, after = token.map
        if token.type == "table_open" and cells > MAX_TABLE_CELLS:
            tables.append((first, after, cells))
            cost = 1
        if spent + cost > LAYOUT_BUDGET:
            cut = first
        spent += cost
        i = j + 1
    out = lines if cut is None else lines[:cut]
    for first, after, cells in reversed(tables):
        if cut is None or after <= cut:
            out[first:after] = _as_text(out[first:after], f"A table of {cells:,} cells, shown as written:")
    if cut is not None:
        out = [*out, *_as_text(lines[cut:], "The rest of this text is too long to lay out; shown as written:")]
    if cut is None and not tables:
        return text
    return "\n".join(out) + "\n"


class LessonMarkdown(Markdown):
    BLOCKS = {**Markdown.BLOCKS, "fence": WrappedFence, "code_block": WrappedFence}

    def __init__(self, markdown: str | None = None, **kwargs: Any) -> None:
        super().__init__(bounded_markdown(markdown) if markdown else markdown, **kwargs)

    def update(self, markdown: str) -> AwaitComplete:
        return super().update(bounded_markdown(markdown))
