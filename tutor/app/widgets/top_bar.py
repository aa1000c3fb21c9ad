"""The one-line bar at the top of every screen: where you are, and the kernel's state."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Static

from tutor.app.widgets.kernel_badge import KernelBadge


class TopBar(Horizontal):
    DEFAULT_CSS = """
    TopBar { height: 1; dock: top; background: $panel; }
    TopBar > #where { width: 1fr; padding: 0 1; text-style: bold; }
    """

    def __init__(self, where: str = "ptfund-tutor") -> None:
        super().__init__()
        self._where = where

    def compose(self) -> ComposeResult:
        yield Static(self._where, id="where", markup=False)
        yield KernelBadge(id="kernel-badge")

    def set_where(self, text: str) -> None:
        self.query_one("#where", Static).update(text)
