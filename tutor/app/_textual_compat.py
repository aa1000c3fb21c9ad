"""Every use of a Textual (and textual-image) API that is not public, in one place.

The widgets that need one derive from a class here, or call a function here, and use only
public names themselves; if an upgrade moves one of these, this module is the one to
change. ``tests/test_private_apis.py`` checks that each still exists and names the
versions it was checked on (``CHECKED_ON``): the floors in pyproject.toml and the version
the snapshots are recorded with.
"""

from __future__ import annotations

from typing import Any

from textual import events
from textual.content import Content
from textual.widgets import TextArea
from textual.widgets.markdown import MarkdownFence

CHECKED_ON = {"textual": ("6.2.0", "8.2.8"), "textual-image": ("0.8.0", "0.12.0")}

# The private names this module relies on, by owner (the test looks each one up).
PRIVATE = {
    "textual.widgets.TextArea": ("_replace_via_keyboard", "_on_key"),
    "textual.widgets.markdown.MarkdownFence": ("_highlighted_code", "_content"),
    "textual_image._terminal": ("get_cell_size",),
}


class GuardedTextArea(TextArea):
    """A TextArea with two hooks Textual offers only through private methods:
    ``allow_keyboard_edit`` may refuse what the keyboard (typing, pasting) would insert,
    and ``before_key`` sees each key before TextArea's own handler and may keep it from
    that handler (``event.prevent_default()``; the key still bubbles up)."""

    def allow_keyboard_edit(self, insert: str, start: Any, end: Any) -> bool:
        return True

    def before_key(self, event: events.Key) -> None:
        pass

    def _replace_via_keyboard(self, insert: str, start: Any, end: Any) -> Any:
        if not self.allow_keyboard_edit(insert, start, end):
            return None
        return super()._replace_via_keyboard(insert, start, end)

    async def _on_key(self, event: events.Key) -> None:
        # Textual calls each class's _on_key down the MRO; prevent_default stops TextArea's.
        self.before_key(event)


def highlighted_code(fence: MarkdownFence) -> Content:
    """A fence's code as Textual highlighted it (re-highlighted on a theme change)."""
    code: Content = fence._highlighted_code
    return code


def keep_fence_content(fence: MarkdownFence, content: Content) -> None:
    """Record ``content`` as what the fence shows (Textual copies it when it updates)."""
    fence._content = content


def terminal_cell_ratio() -> float:
    """How many times taller than wide a terminal cell is (2 when the terminal does not say)."""
    try:
        from textual_image._terminal import get_cell_size

        cell = get_cell_size()
        return cell.height / cell.width if cell.width and cell.height else 2.0
    except Exception:
        return 2.0
