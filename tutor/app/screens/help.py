"""Every key binding, read from the bindings themselves so the list cannot go stale."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown, Static

# The editor's own keys worth knowing (TextArea's bindings are many; these matter here).
EDITOR_KEYS = [
    ("tab", "indent"),
    ("ctrl+z / ctrl+y", "undo / redo"),
    ("ctrl+x / ctrl+c / ctrl+v", "cut / copy / paste"),
    ("escape", "leave the editor (focus the next pane)"),
]


def _sections():
    from tutor.app.app import TutorApp
    from tutor.app.screens.confirm import ConfirmScreen
    from tutor.app.screens.home import HomeScreen
    from tutor.app.screens.lesson import LessonScreen
    from tutor.app.screens.progress import ProgressScreen
    from tutor.app.screens.quiz import QuizScreen
    from tutor.app.widgets.repl import Repl

    return [
        ("Everywhere", TutorApp.BINDINGS + [Binding("ctrl+p", "command_palette", "Command palette")]),
        ("Home", HomeScreen.BINDINGS),
        ("Lesson", LessonScreen.BINDINGS),
        ("Scratch REPL (the line under the output)", Repl.BINDINGS + [Binding("enter", "submit", "Run the line")]),
        ("Recall quiz", QuizScreen.BINDINGS),
        ("Progress", ProgressScreen.BINDINGS),
        ("Questions", ConfirmScreen.BINDINGS),
    ]


def binding_rows(app, bindings) -> list[tuple[str, str]]:
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


def help_markdown(app) -> str:
    lines = ["# Keys", ""]
    for title, bindings in _sections():
        lines += [f"## {title}", "", "| key | does |", "|---|---|"]
        lines += [f"| `{keys}` | {desc} |" for keys, desc in binding_rows(app, bindings)]
        lines.append("")
    lines += ["## Code editor", "", "| key | does |", "|---|---|"]
    lines += [f"| `{k}` | {d} |" for k, d in EDITOR_KEYS]
    lines += [
        "",
        "The mouse works too, but nothing needs it. ctrl+p lists the main actions by name.",
        "Your code is saved as you type; quitting and coming back restores it.",
    ]
    return "\n".join(lines)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,f1,q", "dismiss", "Close", id="help.close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="dialog wide tall", id="help"):
            yield Static("Help (esc closes)", classes="dialog-title")
            yield Markdown(help_markdown(self.app))
