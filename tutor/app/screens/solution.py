"""The reference solution, highlighted; enter copies it into the editor."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Markdown, Static


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
            with VerticalScroll(classes="dialog-code"):
                yield Markdown(f"```python\n{self._code.rstrip()}\n```")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Put it in the editor (enter)", id="use", variant="primary")
                yield Button("Close (esc)", id="close")

    def on_mount(self) -> None:
        self.query_one("#use", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "use")

    def action_close(self, use: bool) -> None:
        self.dismiss(use)
