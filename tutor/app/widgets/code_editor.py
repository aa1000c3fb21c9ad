"""The exercise's code editor: TextArea.code_editor with Python highlighting.

TextArea highlights through tree-sitter, an optional extra of textual. Where it is
missing, the same highlight names are produced with Pygments (already a dependency), so
the editor is coloured either way.
"""

from __future__ import annotations

from textual.widgets import TextArea

from tutor.app.completion import insertion, summary

try:
    from textual._tree_sitter import TREE_SITTER
except ImportError:  # pragma: no cover - textual moved it
    TREE_SITTER = False

# Pygments token type (by its dotted name, most specific first) -> TextArea highlight name.
_TOKEN_NAMES = (
    ("Comment", "comment"),
    ("Literal.String.Doc", "string.documentation"),
    ("Literal.String", "string"),
    ("Literal.Number.Float", "float"),
    ("Literal.Number", "number"),
    ("Keyword.Constant", "boolean"),
    ("Keyword.Namespace", "include"),
    ("Keyword", "keyword"),
    ("Operator.Word", "keyword.operator"),
    ("Operator", "operator"),
    ("Name.Builtin.Pseudo", "variable.builtin"),
    ("Name.Builtin", "function.call"),
    ("Name.Function", "function"),
    ("Name.Class", "class"),
    ("Name.Decorator", "function"),
    ("Name.Exception", "type"),
    ("Punctuation", "punctuation.bracket"),
)


def _highlight_name(token_type) -> str | None:
    dotted = ".".join(token_type)
    for prefix, name in _TOKEN_NAMES:
        if dotted == prefix or dotted.startswith(prefix + "."):
            return name
    return None


class CodeEditor(TextArea):
    """A Python code editor; ``code_editor`` defaults plus a Pygments fallback highlighter."""

    _pygments = not TREE_SITTER  # class level: TextArea highlights during __init__

    def __init__(self, text: str = "", *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(
            text,
            language="python" if TREE_SITTER else None,
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

    def _build_highlight_map(self) -> None:
        if not self._pygments:
            return super()._build_highlight_map()
        self._line_cache.clear()
        highlights = self._highlights
        highlights.clear()
        try:
            from pygments.lexers.python import PythonLexer

            tokens = PythonLexer().get_tokens_unprocessed(self.text)
        except Exception:  # highlighting is a nicety; never break editing for it
            return
        # TextArea wants (start byte, end byte, name) per line.
        line_starts = [0]
        for line in self.text.split("\n"):
            line_starts.append(line_starts[-1] + len(line) + 1)
        lines = self.text.split("\n")
        row = 0
        for index, token_type, value in tokens:
            name = _highlight_name(token_type)
            if name is None or not value:
                continue
            while row + 1 < len(line_starts) and line_starts[row + 1] <= index:
                row += 1
            start, r = index, row
            remaining = value
            while remaining and r < len(lines):
                col = start - line_starts[r]
                line = lines[r]
                piece_len = min(len(remaining), len(line) - col)
                if piece_len > 0:
                    b0 = len(line[:col].encode())
                    b1 = b0 + len(line[col:col + piece_len].encode())
                    highlights[r].append((b0, b1, name))
                remaining = remaining[piece_len + 1:]  # +1: the newline
                r += 1
                start = line_starts[r] if r < len(line_starts) else start
