"""Home: packs and lessons with progress, recall cards due, the kernel, and where you were."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from tutor.app.screens.base import TutorScreen
from tutor.app.widgets.top_bar import TopBar
from tutor.progress.scheduling import short_list

if TYPE_CHECKING:
    from tutor.app.app import TutorApp
    from tutor.app.status import KernelStatus
    from tutor.packs.lazy_catalog import LazyCatalog
    from tutor.progress.records import ExerciseStats, Position


@dataclass(frozen=True)
class LessonRow:
    pack: str
    lesson: str
    title: str
    exercises: int
    passed: int
    attempted: int
    cards: int
    due: int


@dataclass(frozen=True)
class HomeData:
    rows: list[LessonRow]
    pack_titles: dict[str, str]
    due: int
    new: int
    new_from: list[str]  # titles of the lessons the quiz draws new cards from
    unopened: int  # never-seen cards of lessons not in the quiz yet
    next_due: datetime | None
    position: tuple[str, str, str | None] | None  # pack, lesson, exercise
    position_label: str | None
    problems: list[str]


def gather(app: TutorApp) -> HomeData:
    """Everything the home screen shows, read in one go (runs in a thread): from the packs'
    outlines, so no lesson is loaded to list it."""
    catalog, store = app.catalog, app.store
    assert catalog is not None  # gathered only once the packs are loaded
    stats = store.exercise_stats() if store else {}
    card_keys = catalog.card_keys()
    picked = store.due_cards(card_keys) if store and card_keys else None
    due_keys = set(picked.due) if picked else set()
    rows = []
    for pack, lesson in catalog.lessons():
        keys = [(pack.id, f"{lesson.id}/{ex.id}") for ex in lesson.exercises]
        rows.append(
            LessonRow(
                pack=pack.id,
                lesson=lesson.id,
                title=lesson.title,
                exercises=len(keys),
                passed=sum(1 for k in keys if k in stats and stats[k].passed),
                attempted=sum(1 for k in keys if k in stats),
                cards=len(lesson.cards),
                due=sum(1 for c in lesson.cards if (pack.id, f"{lesson.id}/{c.id}") in due_keys),
            )
        )
    in_quiz = store.quiz_lessons() if store else {}
    pos, label = continue_at(catalog, store.position() if store else None, stats)
    return HomeData(
        rows=rows,
        pack_titles={p.id: p.title for p in catalog.packs},
        due=len(picked.due) if picked else 0,
        new=len(picked.new) if picked else 0,
        new_from=[les.title for pack, les in catalog.lessons() if (pack.id, les.id) in in_quiz and les.cards],
        unopened=picked.unopened if picked else 0,
        next_due=store.next_due(card_keys) if store and card_keys else None,
        position=pos,
        position_label=label,
        problems=problem_lines(catalog),
    )


def continue_at(
    catalog: LazyCatalog, position: Position | None, stats: dict[tuple[str, str], ExerciseStats]
) -> tuple[tuple[str, str, str | None] | None, str | None]:
    """Where Continue goes, and its label. The saved position, moved on to the next exercise
    not yet passed when that one was; when the position's pack is not loaded now (it came
    with --pack), from the latest attempt in the packs that are."""
    order = [(pack.id, lesson, ex) for pack, lesson in catalog.lessons() for ex in lesson.exercises]
    keys = [(pack_id, f"{lesson.id}/{ex.id}") for pack_id, lesson, ex in order]
    start = None
    if position is not None:
        pack = catalog.pack(position.pack)
        lesson = pack.lesson(position.lesson) if pack else None
        if lesson is not None:
            here = (position.pack, f"{position.lesson}/{position.exercise}")
            start = keys.index(here) if here in keys else None
            if start is None:  # a lesson without exercises, or its reading: stay there
                return (position.pack, lesson.id, position.exercise), lesson.title
    if start is None:
        tried = [(stats[key].last_at, i) for i, key in enumerate(keys) if key in stats]
        if not tried:
            return None, None
        start = max(tried)[1]
    later_first = [*range(start, len(keys)), *range(start)]
    at = next((i for i in later_first if not (keys[i] in stats and stats[keys[i]].passed)), start)
    pack_id, lesson, ex = order[at]
    return (pack_id, lesson.id, ex.id), f"{lesson.title} › {ex.title}"


def problem_lines(catalog: LazyCatalog, shown: int = 6) -> list[str]:
    """Which packs did not load and why, most useful first: one line per pack, then the
    first problems (``pack validate`` lists them all)."""
    lines = []
    for root in catalog.broken:
        count = sum(
            1
            for p in catalog.problems
            if p.file == str(root) or p.file.startswith(f"{root.name}/") or p.file.startswith(f"{root}/")
        )
        lines.append(f"Not loaded: {root} ({count} problem{'s' * (count != 1)}; ptfund-tutor pack validate {root})")
    lines += [str(p) for p in catalog.problems[:shown]]
    if len(catalog.problems) > shown:
        lines.append(f"… and {len(catalog.problems) - shown} more")
    return lines


def recall_text(data: HomeData) -> Content:
    """Cards due and new, and where new cards come from (lessons opened, named or added)."""
    if data.due or data.new:
        parts = []
        if data.due:
            parts.append(f"{data.due} card{'s' * (data.due != 1)} due now")  # the Progress screen's "now"
        if data.new:
            parts.append(f"{data.new} new")
        head = ", ".join(parts)
    elif data.next_due is not None:
        head = f"Nothing due. Next card {_when(data.next_due)}."
    else:
        head = "No cards yet."
    if data.new_from:
        source = "New cards come from " + short_list(data.new_from) + "."
    else:
        source = "New cards come from the lessons you open."
    hints = []
    if data.due or data.new:
        hints.append("r: the quiz")
    if data.unopened:
        hints.append("a: add the highlighted lesson's cards")
    return Content.assemble(head, "\n", (source, "$text-muted"), *(("\n" + h, "$text-muted") for h in hints))


def _bar(done: int, total: int, width: int = 8) -> str:
    if total == 0:
        return " " * width
    filled = round(width * done / total)
    return "█" * filled + "░" * (width - filled)


def lesson_prompt(row: LessonRow) -> Content:
    mark = "✓" if row.exercises and row.passed == row.exercises else ("…" if row.attempted else " ")
    due = f"{row.due} due" if row.due else ""
    return Content.assemble(
        (f"{mark} ", "$text-success" if mark == "✓" else "$text-muted"),
        (_bar(row.passed, row.exercises, 6), "$text-success"),
        (f" {row.passed}/{row.exercises}  ", "$text-muted"),
        row.title,
        (f"  {due}", "$text-warning"),
    )


class HomeScreen(TutorScreen):
    _data: HomeData | None = None  # what is shown, once loaded

    BINDINGS = [
        Binding("enter", "open", "Open lesson", id="home.open", show=False),
        Binding("c", "continue", "Continue", id="home.continue"),
        Binding("r", "quiz", "Recall quiz", id="home.quiz"),
        Binding("a", "add_cards", "Add cards", id="home.add-cards"),
        Binding("p", "progress", "Progress", id="home.progress"),
        Binding("q", "app.quit", "Quit", id="home.quit"),
    ]

    def compose(self) -> ComposeResult:
        yield TopBar("ptfund-tutor · PyTorch fundamentals")
        with Horizontal(id="home"):
            with Vertical(id="home-lessons"):
                yield Static("Lessons", classes="section-title")
                yield OptionList(id="lessons")
            with VerticalScroll(id="home-side"):
                yield Static("Continue", classes="section-title")
                yield Static("Loading…", id="continue")
                yield Static("Recall", classes="section-title")
                yield Static("", id="recall")
                yield Static("Kernel", classes="section-title")
                yield Static("", id="kernel-detail")
                yield Static("", id="problems")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#lessons", OptionList).loading = True
        self.watch(self.app, "kernel_status", self._show_kernel)
        self.refresh_data()

    def on_screen_resume(self) -> None:
        if self.app.ready.is_set():
            self.refresh_data()

    def _show_kernel(self, status: KernelStatus) -> None:
        text = status.label
        if status.message:
            text += f"\n{status.message}"
        self.query_one("#kernel-detail", Static).update(text)

    @work(group="home-refresh", exclusive=True, exit_on_error=False)
    async def refresh_data(self) -> None:
        app = self.app
        await app.ready.wait()
        lessons = self.query_one("#lessons", OptionList)
        if app.catalog is None:
            lessons.loading = False
            self.query_one("#continue", Static).update(app.load_error or "Nothing loaded.")
            return
        data = await asyncio.to_thread(gather, app)
        self._data = data
        lessons.loading = False
        self._show(data)

    def _show(self, data: HomeData) -> None:
        lessons = self.query_one("#lessons", OptionList)
        highlighted = lessons.highlighted_option.id if lessons.highlighted_option else None
        lessons.clear_options()
        options: list[Option | None] = []
        current_pack = None
        for row in data.rows:
            if row.pack != current_pack:
                current_pack = row.pack
                options.append(
                    Option(
                        Content.styled(data.pack_titles.get(row.pack, row.pack), "bold $text-primary"), disabled=True
                    )
                )
            options.append(Option(lesson_prompt(row), id=f"{row.pack}:{row.lesson}"))
        if not data.rows:
            options.append(Option("No lessons loaded: see the problems on the right.", disabled=True))
        lessons.add_options(options)
        target = highlighted or (f"{data.position[0]}:{data.position[1]}" if data.position else None)
        if target is not None:
            try:
                lessons.highlighted = lessons.get_option_index(target)
            except Exception:
                pass
        if lessons.highlighted is None:
            first = next((i for i, o in enumerate(lessons.options) if not o.disabled), None)
            lessons.highlighted = first
        lessons.focus()

        cont = self.query_one("#continue", Static)
        if data.position_label:
            cont.update(Content.assemble(data.position_label, ("\npress c to continue", "$text-muted")))
        else:
            cont.update(Content.assemble("Start with the first lesson.", ("\npress enter on a lesson", "$text-muted")))

        self.query_one("#recall", Static).update(recall_text(data))

        problems = self.query_one("#problems", Static)
        if data.problems:
            problems.update(Content.assemble(("Pack problems\n", "bold $text-error"), "\n".join(data.problems)))
            problems.display = True
        else:
            problems.display = False

    # ------------------------------------------------------------ actions

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option.id:
            pack, lesson = event.option.id.split(":", 1)
            self.open_lesson(pack, lesson)

    def action_open(self) -> None:
        lessons = self.query_one("#lessons", OptionList)
        option = lessons.highlighted_option
        if option is not None and option.id:
            pack, lesson = option.id.split(":", 1)
            self.open_lesson(pack, lesson)

    @work(group="exercise", exclusive=True, exit_on_error=False)
    async def open_lesson(self, pack: str, lesson: str, exercise: str | None = None) -> None:
        """Load the lesson (validated now: the home screen listed its outline) and open it;
        a lesson with problems says its first one, and the others stay usable."""
        from tutor.app.screens.lesson import LessonScreen
        from tutor.errors import TutorError

        app = self.app
        if app.catalog is None:
            return
        try:
            p, les = await asyncio.to_thread(app.catalog.load_lesson, pack, lesson)
        except TutorError as exc:
            self.app.cannot_open(exc)
            return
        if self.is_current:
            await app.push_screen(LessonScreen(p, les, exercise))

    def action_continue(self) -> None:
        data = self._data
        if data is None or data.position is None:
            self.action_open()
            return
        pack, lesson, exercise = data.position
        self.open_lesson(pack, lesson, exercise)

    def action_quiz(self) -> None:
        self.app.open_quiz()

    @work(group="home-add-cards", exit_on_error=False)
    async def action_add_cards(self) -> None:
        """The highlighted lesson's cards join the quiz without opening the lesson."""
        app = self.app
        option = self.query_one("#lessons", OptionList).highlighted_option
        if app.store is None or app.catalog is None or option is None or not option.id:
            return
        pack_id, lesson_id = option.id.split(":", 1)
        pack = app.catalog.pack(pack_id)
        lesson = pack.lesson(lesson_id) if pack else None  # its outline: ids suffice here
        if lesson is None:
            return
        if not lesson.cards:
            self.notify(f"{lesson.title} has no recall cards.")
            return
        added = await asyncio.to_thread(app.store.add_quiz_lesson, pack_id, lesson_id, "added")
        n = len(lesson.cards)
        if added:
            self.notify(f"{lesson.title}: its {n} card{'s' * (n != 1)} join the recall quiz.")
        else:
            self.notify(f"{lesson.title}'s cards are already in the recall quiz.")
        self.refresh_data()

    def action_progress(self) -> None:
        self.app.open_progress()


def _when(due: datetime) -> str:
    from tutor.progress.scheduling import when

    return when(due, datetime.now(timezone.utc))
