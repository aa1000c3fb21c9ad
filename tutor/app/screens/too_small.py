"""Shown instead of the app while the terminal is smaller than 80x24."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Center, Middle
from textual.screen import Screen
from textual.widgets import Static

# The smallest terminal the screens are laid out for (the app checks it on every resize).
MIN_WIDTH, MIN_HEIGHT = 80, 24


class TooSmallScreen(Screen):
    DEFAULT_CSS = """
    TooSmallScreen { align: center middle; }
    TooSmallScreen Static { width: auto; text-align: center; }
    """

    def compose(self) -> ComposeResult:
        with Middle(), Center():
            yield Static(id="too-small")

    def on_mount(self) -> None:
        self._show()

    def on_resize(self) -> None:
        self._show()

    def _show(self) -> None:
        w, h = self.app.size
        self.query_one("#too-small", Static).update(
            f"The terminal is {w}x{h}; ptfund-tutor needs at least {MIN_WIDTH}x{MIN_HEIGHT}.\n"
            "Make the window larger (ctrl+q quits)."
        )
