"""The exercise's code editor: TextArea with Python highlighting, line numbers, indents.

TextArea highlights through tree-sitter; the package depends on tree-sitter and its Python
grammar (textual's own ``syntax`` extra would pull in fifteen grammars we never use).
"""

from __future__ import annotations

from typing import Any

from textual import events
from textual.widgets.text_area import Document

from tutor.app._textual_compat import GuardedTextArea
from tutor.app.completion import insertion, summary
from tutor.grading.code_size import code_size, too_large

# A line starting with one of these ends its block: the next line goes back one level.
_BLOCK_ENDERS = ("return", "pass", "break", "continue", "raise")


def next_line_indent(before_cursor: str, width: int = 4) -> str:
    """The indentation Enter starts the next line with: the current line's, one level more
    after a line that opens a block (``def f(x):``), one less after ``return`` and the like."""
    indent = before_cursor[: len(before_cursor) - len(before_cursor.lstrip())]
    code = _without_comment(before_cursor).rstrip()
    if code.endswith(":"):
        return indent + " " * width
    words = code.split(maxsplit=1)
    if words and words[0] in _BLOCK_ENDERS and indent:
        return indent[:-width] if indent.endswith(" " * width) else ""
    return indent


def _without_comment(line: str) -> str:
    """``line`` before a ``#`` that is outside quotes (enough for one line of Python)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#":
            return line[:i]
    return line


class CodeEditor(GuardedTextArea):
    """A Python code editor with ``TextArea.code_editor``'s defaults and completion."""

    def __init__(self, text: str = "", *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(
            text,
            language="python",
            soft_wrap=False,
            tab_behavior="indent",
            show_line_numbers=True,
            id=id,
            classes=classes,
        )
        self.indent_width = 4

    def allow_keyboard_edit(self, insert: str, start: Any, end: Any) -> bool:
        # Pastes (and other long insertions) may not take the code past the bound that
        # `check` and grading enforce: past it the editor slows and nothing would run.
        if len(insert) > 1:
            after = code_size(self.text) - code_size(self.get_text_range(start, end)) + code_size(insert)
            if (problem := too_large(after, "The code")) is not None:
                self.notify(f"Not pasted: {problem}.", severity="error")
                return False
        return True

    def apply_completion(self, matches: list[str], start: int, end: int) -> str | None:
        """Replace offsets start..end with the only match or the common prefix; return the
        choices to show when there are several."""
        replacement = insertion(matches, end - start)
        if replacement is not None:
            doc = self.document
            assert isinstance(doc, Document)  # a Python TextArea's document has offsets
            self.replace(replacement, doc.get_location_from_index(start), doc.get_location_from_index(end))
        return summary(matches)

    def before_key(self, event: events.Key) -> None:
        # TextArea's indent mode spends escape on leaving the editor, so going home took two
        # presses; escape goes on to the screen (home), f5 and ctrl+l move the focus instead.
        if event.key == "escape":
            event.prevent_default()  # TextArea's handler is skipped; the key still bubbles up
        elif event.key == "enter" and not self.read_only:
            event.prevent_default()
            event.stop()
            start, end = self.selection
            row, col = min(start, end)
            self.replace("\n" + next_line_indent(self.document.get_line(row)[:col], self.indent_width), start, end)

    def on_mount(self) -> None:
        self.watch(self.app, "theme", self._match_app_theme)

    def _match_app_theme(self) -> None:
        # "css" takes the app's colours but dark-theme syntax colours; light needs its own.
        self.theme = "css" if self.app.current_theme.dark else "github_light"
