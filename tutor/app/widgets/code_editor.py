"""The exercise's code editor: TextArea with Python highlighting, line numbers, indents.

TextArea highlights through tree-sitter; the package depends on tree-sitter and its Python
grammar (textual's own ``syntax`` extra would pull in fifteen grammars we never use).
"""

from __future__ import annotations

from textual.widgets import TextArea

from tutor.app.completion import insertion, summary


class CodeEditor(TextArea):
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

    def apply_completion(self, matches: list[str], start: int, end: int) -> str | None:
        """Replace offsets start..end with the only match or the common prefix; return the
        choices to show when there are several."""
        replacement = insertion(matches, end - start)
        if replacement is not None:
            doc = self.document
            self.replace(replacement, doc.get_location_from_index(start), doc.get_location_from_index(end))
        return summary(matches)

    def on_mount(self) -> None:
        self.watch(self.app, "theme", self._match_app_theme)

    def _match_app_theme(self) -> None:
        # "css" takes the app's colours but dark-theme syntax colours; light needs its own.
        self.theme = "css" if self.app.current_theme.dark else "github_light"
