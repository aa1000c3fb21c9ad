"""Progress: completion per lesson, reviews and recall rate over time, and what falls due next.

Charts are text (a Sparkline and bar rows drawn with Content): no plotting library in the
UI process.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Footer, Sparkline, Static

from tutor.app.screens.base import TutorScreen

if TYPE_CHECKING:
    from tutor.app.app import TutorApp
from tutor.app.widgets.bar_chart import BarChart
from tutor.app.widgets.top_bar import TopBar

HISTORY_DAYS = 30
FORECAST_DAYS = 14
RATE_WEEKS = 8  # recall rate per week, this many weeks back


@dataclass(frozen=True)
class ProgressData:
    rows: list[tuple[str, str, str, str, str]]  # lesson, exercises, attempts, hints, cards
    reviews_per_day: list[int]  # oldest first, HISTORY_DAYS long, today last
    reviews_total: int
    correct_total: int
    forecast: list[tuple[str, int]]  # label, cards due that day
    recall_rate: list[tuple[str, int, int]]  # week label, % recalled, reviews; oldest first


def gather(app: TutorApp, now: datetime | None = None) -> ProgressData:
    catalog, store = app.catalog, app.store
    assert catalog is not None and store is not None  # gathered only once both are loaded
    now = now or datetime.now(timezone.utc)
    today = now.astimezone().date()
    stats = store.exercise_stats()
    states = store.card_states()
    rows = []
    per_day: Counter = Counter()
    per_week: Counter = Counter()
    right_per_week: Counter = Counter()
    week_start = today - timedelta(days=today.weekday())  # Monday of this week
    total = correct = 0
    for pack, lesson in catalog.lessons():
        keys = [f"{lesson.id}/{ex.id}" for ex in lesson.exercises]
        passed = sum(1 for k in keys if (pack.id, k) in stats and stats[(pack.id, k)].passed)
        attempts = sum(stats[(pack.id, k)].attempts for k in keys if (pack.id, k) in stats)
        hints = sum(store.hints_used(pack.id, k) for k in keys)
        card_keys = [f"{lesson.id}/{c.id}" for c in lesson.cards]
        seen = sum(1 for k in card_keys if (pack.id, k) in states)
        rows.append((lesson.title, f"{passed}/{len(keys)}", str(attempts), str(hints), f"{seen}/{len(card_keys)}"))
        for k in card_keys:
            for review in store.reviews_for(pack.id, k):
                total += 1
                correct += review.correct
                day = review.at.astimezone().date()
                per_day[day] += 1
                week = (week_start - (day - timedelta(days=day.weekday()))).days // 7  # 0: this week
                per_week[week] += 1
                right_per_week[week] += review.correct
    history = [per_day.get(today - timedelta(days=d), 0) for d in range(HISTORY_DAYS - 1, -1, -1)]
    # The first bar is home's count: the cards of the packs loaded now that the quiz would
    # ask at this moment; cards due later today come next.
    loaded = [(pack.id, f"{lesson.id}/{c.id}") for pack, lesson in catalog.lessons() for c in lesson.cards]
    due_now = set(store.due_cards(loaded, now).due) if loaded else set()
    due_per_day: Counter = Counter()
    for key in loaded:
        if key in states and key not in due_now:
            due_per_day[max(states[key].due.astimezone().date(), today)] += 1
    forecast = [("now", len(due_now)), ("later today", due_per_day.get(today, 0))]
    for d in range(1, FORECAST_DAYS):
        label = "tomorrow" if d == 1 else f"in {d} days"
        forecast.append((label, due_per_day.get(today + timedelta(days=d), 0)))
    rate = []
    for w in range(RATE_WEEKS - 1, -1, -1):
        label = "this week" if w == 0 else ("last week" if w == 1 else f"{w} weeks ago")
        n = per_week.get(w, 0)
        rate.append((label, round(100 * right_per_week.get(w, 0) / n) if n else 0, n))
    return ProgressData(rows, history, total, correct, forecast, rate)


class ProgressScreen(TutorScreen):
    BINDINGS = [Binding("escape", "app.pop_screen", "Back", id="progress.back")]

    def compose(self) -> ComposeResult:
        yield TopBar("Progress")
        with VerticalScroll(id="progress"):
            yield Static("Lessons", classes="section-title")
            yield DataTable(id="lesson-table", cursor_type="row", zebra_stripes=True)
            yield Static(f"Reviews, last {HISTORY_DAYS} days", classes="section-title")
            yield Sparkline([], id="reviews-spark")
            yield Static("", id="reviews-summary")
            yield Static("Recall rate per week (cards answered right)", classes="section-title")
            yield BarChart(id="recall-rate")
            yield Static(f"Cards due, next {FORECAST_DAYS} days", classes="section-title")
            yield BarChart(id="forecast")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        table = self.query_one("#lesson-table", DataTable)
        # Short headers: at 80 columns, with a scrollbar for the rows, the longest built-in
        # title leaves room for all five ("Cards": seen of all).
        table.add_columns("Lesson", "Passed", "Attempts", "Hints", "Cards")
        self.load()

    @work(group="progress", exclusive=True, exit_on_error=False)
    async def load(self) -> None:
        app = self.app
        await app.ready.wait()
        if app.catalog is None or app.store is None:
            self.query_one("#reviews-summary", Static).update(app.load_error or "Nothing loaded.")
            return
        data = await asyncio.to_thread(gather, app)
        table = self.query_one("#lesson-table", DataTable)
        table.clear()
        for row in data.rows:
            table.add_row(*row)
        self.query_one("#reviews-spark", Sparkline).data = data.reviews_per_day
        if data.reviews_total:
            rate = round(100 * data.correct_total / data.reviews_total)
            summary = (
                f"{data.reviews_total} reviews, {rate}% right; "
                f"{data.reviews_per_day[-1]} today, {sum(data.reviews_per_day[-7:])} this week."
            )
        else:
            summary = "No reviews yet: the recall quiz (r on the home screen) starts them."
        self.query_one("#reviews-summary", Static).update(summary)
        self.query_one("#forecast", BarChart).show(data.forecast)
        weeks = [(label, pct) for label, pct, _ in data.recall_rate]
        texts = [f"{pct}% of {n}" if n else "no reviews" for _, pct, n in data.recall_rate]
        self.query_one("#recall-rate", BarChart).show(weeks, top=100, texts=texts)
