"""The command palette's lessons and exercises: ctrl+p, then part of a title, opens it.

Exercises already passed say so, as the home screen's lesson list does for lessons.
"""

from __future__ import annotations

import asyncio
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from textual.command import Hit, Hits, Provider

if TYPE_CHECKING:
    from tutor.app.app import TutorApp
    from tutor.packs.lazy_catalog import LazyCatalog

Where = tuple[str, str, str | None]  # (pack, lesson, exercise)


def palette_entries(catalog: LazyCatalog, stats: dict[tuple[str, str], Any]) -> list[tuple[str, str, Where]]:
    """(text, help, (pack, lesson, exercise)) for every lesson and exercise, in pack order."""
    entries: list[tuple[str, str, Where]] = []
    for pack, lesson in catalog.lessons():
        done = sum(
            1 for ex in lesson.exercises if getattr(stats.get((pack.id, f"{lesson.id}/{ex.id}")), "passed", False)
        )
        entries.append(
            (
                f"Lesson: {lesson.title}",
                f"Open the lesson ({done}/{len(lesson.exercises)} exercises passed)",
                (pack.id, lesson.id, None),
            )
        )
        for ex in lesson.exercises:
            passed = getattr(stats.get((pack.id, f"{lesson.id}/{ex.id}")), "passed", False)
            entries.append(
                (
                    f"Exercise: {ex.title}" + (" ✓" if passed else ""),
                    f"In {lesson.title}" + (" · passed" if passed else ""),
                    (pack.id, lesson.id, ex.id),
                )
            )
    return entries


class LessonCommands(Provider):
    """Every lesson and exercise of the loaded packs, by title."""

    _entries: list[tuple[str, str, Where]] = []

    async def startup(self) -> None:
        app = self.app
        ready = getattr(app, "ready", None)
        if ready is not None:
            await ready.wait()  # opened in the first second: the catalog is still loading
        catalog, store = getattr(app, "catalog", None), getattr(app, "store", None)
        if catalog is None:
            return
        stats = await asyncio.to_thread(store.exercise_stats) if store is not None else {}
        self._entries = palette_entries(catalog, stats)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for text, help, where in self._entries:
            score = matcher.match(text)
            if score > 0:
                yield Hit(
                    score,
                    matcher.highlight(text),
                    partial(cast("TutorApp", self.app).open_lesson, *where),
                    text=text,
                    help=help,
                )
