"""The reference solution, highlighted; enter copies it into the editor.

The code wraps rather than running off a narrow dialog (80 columns leave about 66 for it):
a clipped line would hide part of the answer."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static, TextArea


class SolutionScreen(ModalScreen[bool]):
    """Dismisses with True when the learner wants the solution in the editor."""

    BINDINGS = [
        Binding("escape", "close(False)", "Close", id="solution.close"),
    ]

    def __init__(self, title: str, code: str) -> None:
        super().__init__()
        self._title, self._code = title, code

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield Static(f"Solution: {self._title}", classes="dialog-title", markup=False)
            yield TextArea(
                self._code.rstrip(),
                language="python",
                read_only=True,
                soft_wrap=True,
                show_cursor=False,
                highlight_cursor_line=False,
                classes="dialog-code",
                id="solution-code",
            )
            with Horizontal(classes="dialog-buttons"):
                yield Button("Put it in the editor (enter)", id="use", variant="primary")
                yield Button("Close (esc)", id="close")

    def on_mount(self) -> None:
        self.query_one("#use", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "use")

    def action_close(self, use: bool) -> None:
        self.dismiss(use)
