"""The class report: what ``grade --report`` found for a pack loaded in the app.

Pass rates per exercise (bars) and per check, then the mistakes ranked by how many
learners made them; the highlighted mistake's learners are listed below. Read from the
report.json that ``grade`` wrote (tutor/grading/report_file.py): no kernel, no torch.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Footer, Static

from tutor.app.screens.base import TutorScreen
from tutor.app.widgets.bar_chart import BarChart
from tutor.app.widgets.top_bar import TopBar
from tutor.errors import TutorError
from tutor.escape import for_terminal, name_for_terminal

MESSAGE_CHARS = 120  # a mistake's message in its row; the whole of it shows below the table


def _percent(rate: float | None) -> str:
    return "-" if rate is None else f"{round(100 * rate)}%"


def _cell(text: str) -> Text:
    # Names and messages come from a class's files: never markup, never control characters.
    return Text(name_for_terminal(text))


class ClassReportScreen(TutorScreen):
    DEFAULT_CSS = """
    #class-report { height: 1fr; padding: 0 1; }
    #check-table, #mistake-table { height: auto; max-height: 16; }
    #mistake-who { margin: 0 1 1 1; }
    """
    BINDINGS = [Binding("escape", "app.pop_screen", "Back", id="class-report.back")]

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.mistakes: list = []  # the ranked mistakes, as the table's rows

    def compose(self) -> ComposeResult:
        yield TopBar("Class report")
        with VerticalScroll(id="class-report"):
            yield Static("Reading the class report…", id="report-summary")
            yield Static("Pass rate per exercise", classes="section-title")
            yield BarChart(id="pass-rates")
            yield Static("Pass rate per check", classes="section-title")
            yield DataTable(id="check-table", cursor_type="row", zebra_stripes=True)
            yield Static("Mistakes, most learners first", classes="section-title")
            yield DataTable(id="mistake-table", cursor_type="row", zebra_stripes=True)
            yield Static("", id="mistake-who")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#check-table", DataTable).add_columns("Exercise", "Check", "Passed", "Rate")
        self.query_one("#mistake-table", DataTable).add_columns("Learners", "Rate", "Exercise", "Kind", "Mistake")
        self.load()

    @work(group="class-report", exclusive=True, exit_on_error=False)
    async def load(self) -> None:
        from tutor.grading.report_file import load

        summary = self.query_one("#report-summary", Static)
        try:
            report = await asyncio.to_thread(load, self.path)
        except TutorError as exc:
            summary.update(for_terminal(str(exc)))
            return
        packs = ", ".join(f"{p.id} {p.version}" for p in report.packs)
        summary.update(
            name_for_terminal(f"{report.learners} learners, {len(report.exercises)} exercises ({packs}); {self.path}")
        )
        bars = [(name_for_terminal(ex.exercise), round(100 * (ex.pass_rate or 0))) for ex in report.exercises]
        texts = [f"{_percent(ex.pass_rate)} ({ex.passed} of {ex.learners})" for ex in report.exercises]
        self.query_one("#pass-rates", BarChart).show(bars, top=100, texts=texts)
        checks = self.query_one("#check-table", DataTable)
        checks.clear()
        for ex in report.exercises:
            for check in ex.checks:
                checks.add_row(
                    _cell(ex.exercise), _cell(check.check), f"{check.passed}/{check.ran}", _percent(check.pass_rate)
                )
        table = self.query_one("#mistake-table", DataTable)
        table.clear()
        self.mistakes = list(report.mistakes)
        for mistake in self.mistakes:
            first = mistake.message.splitlines()[0] if mistake.message else ""
            table.add_row(
                str(mistake.count),
                _percent(mistake.rate),
                _cell(mistake.exercise or ""),
                mistake.kind,
                _cell(first[:MESSAGE_CHARS] + ("…" if len(first) > MESSAGE_CHARS else "")),
            )
        if not self.mistakes:
            self.query_one("#mistake-who", Static).update(
                "No mistakes named: every verdict passed or said nothing more."
            )

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id != "mistake-table" or not 0 <= event.cursor_row < len(self.mistakes):
            return
        mistake = self.mistakes[event.cursor_row]
        who = ", ".join(name_for_terminal(name) for name in mistake.learners)
        self.query_one("#mistake-who", Static).update(
            Text(f"{for_terminal(mistake.message)}\n{mistake.id}, made by: {who}")
        )
