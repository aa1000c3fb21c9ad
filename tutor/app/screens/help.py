"""Every key binding, read from the bindings themselves so the list cannot go stale."""

from __future__ import annotations

from collections.abc import Iterable

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

# The editor's own keys worth knowing (TextArea's bindings are many; these matter here).
EDITOR_KEYS = [
    ("tab", "indent"),
    ("f7", "select all"),
    ("shift+arrows", "select"),
    ("ctrl+z / ctrl+y", "undo / redo"),
    ("ctrl+x / ctrl+c / ctrl+v", "cut / copy / paste (ctrl+c stops code while it runs)"),
    ("arrows / home / end", "move; a long line scrolls sideways with the cursor"),
]


def _sections(app: App[object]) -> list[tuple[str, Iterable[BindingType]]]:
    from tutor.app.screens.class_report import ClassReportScreen
    from tutor.app.screens.confirm import ConfirmScreen
    from tutor.app.screens.home import HomeScreen
    from tutor.app.screens.lesson import LessonScreen
    from tutor.app.screens.progress import ProgressScreen
    from tutor.app.screens.quiz import QuizScreen
    from tutor.app.widgets.figure import FigureScreen
    from tutor.app.widgets.repl import Repl

    return [
        ("Everywhere", [*app.BINDINGS, Binding("ctrl+p", "command_palette", "Command palette")]),
        ("Home", HomeScreen.BINDINGS),
        ("Lesson", LessonScreen.BINDINGS),
        ("Scratch REPL (the line under the output)", [*Repl.BINDINGS, Binding("enter", "submit", "Run the line")]),
        ("Recall quiz", QuizScreen.BINDINGS),
        ("Progress", ProgressScreen.BINDINGS),
        ("Class report", ClassReportScreen.BINDINGS),
        ("Figure", FigureScreen.BINDINGS),
        ("Questions", ConfirmScreen.BINDINGS),
    ]


def binding_rows(app: App[object], bindings: Iterable[BindingType]) -> list[tuple[str, str]]:
    """(keys, description) per action, keys of one action joined with ' / '."""
    rows: dict[str, tuple[list[str], str]] = {}
    for binding in Binding.make_bindings(bindings):
        if not (binding.tooltip or binding.description):
            continue  # a hidden twin of a listed binding
        keys, _ = rows.setdefault(binding.action, ([], binding.tooltip or binding.description))
        shown = app.get_key_display(binding)
        if shown not in keys:
            keys.append(shown)
    return [(" / ".join(keys), desc) for keys, desc in rows.values()]


def help_sections(app: App[object]) -> list[tuple[str, list[tuple[str, str]]]]:
    sections = [(title, binding_rows(app, bindings)) for title, bindings in _sections(app)]
    sections.append(("Code editor", EDITOR_KEYS))
    return sections


KEYS_COLUMN = 18  # keys longer than this get a line of their own


def help_content(app: App[object]) -> Content:
    sections = help_sections(app)
    width = min(KEYS_COLUMN, max(len(keys) for _, rows in sections for keys, _ in rows)) + 2
    parts: list = []
    for title, rows in sections:
        parts += [(title, "bold $text-primary"), "\n"]
        for keys, desc in rows:
            if len(keys) > width - 2:  # never run keys and description together
                parts += [(f"  {keys}", "bold $text-accent"), "\n", " " * (width + 2), desc, "\n"]
            else:
                parts += [(f"  {keys:<{width}}", "bold $text-accent"), desc, "\n"]
        parts.append("\n")
    parts.append(
        "The mouse works too, but nothing needs it; ctrl+p finds the main actions by name.\n"
        "Your code is saved as you type: quitting and coming back restores it."
    )
    return Content.assemble(*parts)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,f1,q", "dismiss", "Close", id="help.close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="dialog wide tall", id="help"):
            yield Static("Keys (esc closes)", classes="dialog-title")
            yield Static(help_content(self.app), id="help-keys")
