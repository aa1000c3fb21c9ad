"""The one-line scratch REPL: quick expressions in the live kernel, with history.

Enter submits (Input.Submitted); up/down walk the history; tab asks the kernel to
complete the word at the cursor.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding
from textual.message import Message
from textual.widgets import Input

from tutor.app.completion import insertion, summary

HISTORY = 200


class Repl(Input):
    BINDINGS = [
        Binding("up", "history(-1)", "Older", show=False, id="repl.older"),
        Binding("down", "history(1)", "Newer", show=False, id="repl.newer"),
        Binding("tab", "complete", "Complete", show=False, id="repl.complete"),
    ]

    @dataclass
    class CompletionRequested(Message):
        repl: Repl
        code: str
        cursor: int

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(placeholder=">>> a quick expression in the live kernel (enter runs it)", id=id)
        self.history: list[str] = []
        self._index = 0

    def remember(self, line: str) -> None:
        if line and (not self.history or self.history[-1] != line):
            self.history.append(line)
            del self.history[:-HISTORY]
        self._index = len(self.history)

    def action_history(self, step: int) -> None:
        if not self.history:
            return
        self._index = max(0, min(len(self.history), self._index + step))
        self.value = self.history[self._index] if self._index < len(self.history) else ""
        self.cursor_position = len(self.value)

    def action_complete(self) -> None:
        self.post_message(self.CompletionRequested(self, self.value, self.cursor_position))

    def apply_completion(self, matches: list[str], start: int, end: int) -> str | None:
        """Insert the only match, or the longest common prefix; return a hint when several."""
        replacement = insertion(matches, end - start)
        if replacement is not None:
            self.value = self.value[:start] + replacement + self.value[end:]
            self.cursor_position = start + len(replacement)
        return summary(matches)
