"""The packs as the app sees them: every pack's outline at once, each lesson loaded (its
files resolved, every field validated) only when something uses its content.

The home screen, the progress view and the command palette need titles and ids, which
the outline has (outline.py); a lesson is loaded when it is opened, and the quiz loads
only the lessons whose cards it asks. With a 5,000-lesson pack that is the difference
between seconds and hundreds of megabytes at start, and one lesson's load. A lesson with
problems does not take its pack down: opening it says its first problem, FILE:LINE:COL,
and the other lessons open as before. Loaded lessons are kept for the session; the lesson
cache (cache.py) serves unchanged ones across sessions.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from tutor.errors import TutorError
from tutor.packs import models as m
from tutor.packs.cache import open_cache
from tutor.packs.catalog import CardRef, Outline
from tutor.packs.loader import Pack, load_lesson
from tutor.packs.outline import LessonOutline, PackOutline
from tutor.packs.problems import Problem


@dataclass
class LazyCatalog:
    outline: Outline

    def __post_init__(self) -> None:
        self._lock = threading.Lock()  # lessons load in worker threads
        self._loaded: dict[str, Pack] = {}  # pack id -> the pack with the lessons loaded so far

    @property
    def packs(self) -> list[PackOutline]:
        return self.outline.packs

    @property
    def problems(self) -> list[Problem]:
        return self.outline.problems

    @property
    def broken(self) -> list[Path]:
        return self.outline.broken

    def pack(self, pack_id: str) -> PackOutline | None:
        return next((p for p in self.packs if p.id == pack_id), None)

    def lessons(self) -> Iterator[tuple[PackOutline, LessonOutline]]:
        for pack in self.packs:
            for les in pack.lessons:
                yield pack, les

    def card_keys(self, lesson: str | None = None) -> list[tuple[str, str]]:
        """(pack id, LESSON/CARD) of every card, in teaching order (of one lesson when given)."""
        return [
            (pack.id, f"{les.id}/{card.id}")
            for pack, les in self.lessons()
            if lesson is None or les.id == lesson
            for card in les.cards
        ]

    def neighbour(self, pack_id: str, lesson_id: str, step: int) -> str | None:
        """The id of the lesson ``step`` places from ``lesson_id`` in its pack, or None."""
        pack = self.pack(pack_id)
        ids = [les.id for les in pack.lessons] if pack is not None else []
        if lesson_id not in ids:
            return None
        at = ids.index(lesson_id) + step
        return ids[at] if 0 <= at < len(ids) else None

    def load_lesson(self, pack_id: str, lesson_id: str) -> tuple[Pack, m.Lesson]:
        """The lesson, loaded now or earlier this session, and the pack that holds it. Blocks
        (files and validation): call it from a thread. A lesson with problems, or no
        longer in the packs, raises TutorError: one sentence, the first problem's
        FILE:LINE:COL."""
        outline = self.pack(pack_id)
        if outline is None or outline.lesson(lesson_id) is None:
            raise TutorError(f"Lesson {lesson_id!r} is no longer in the loaded packs")
        with self._lock:
            pack = self._loaded.get(pack_id)
            if pack is None:
                pack = Pack(outline.manifest, [], outline.root, outline.builtin, distribution=outline.distribution)
                self._loaded[pack_id] = pack
            lesson = pack.lesson(lesson_id)
            if lesson is not None:
                return pack, lesson
            cache = open_cache(outline.root)
            lesson, origins, problems = load_lesson(outline.root, lesson_id, cache)
            if cache is not None:
                cache.save(prune=False)  # the pack's other lessons stay remembered
            if lesson is None or problems:
                problems.sort(key=lambda p: (p.file, p.line, p.col))
                more = len(problems) - 1
                rest = f" (and {more} more: `ptfund-tutor pack validate {outline.root}` lists them)" if more else ""
                raise TutorError(f"{problems[0]}{rest}")
            order = [les.id for les in outline.lessons]
            pack.lessons = sorted([*pack.lessons, lesson], key=lambda les: order.index(les.id))
            pack.origins.update({(lesson_id, *k): v for k, v in origins.items()})
            return pack, lesson

    def card_refs(self, keys: Iterable[tuple[str, str]]) -> tuple[dict[tuple[str, str], CardRef], list[str]]:
        """The cards of ``keys`` (pack id, LESSON/CARD), loading only their lessons; and one
        sentence per lesson that could not load (its cards are left out)."""
        refs: dict[tuple[str, str], CardRef] = {}
        failed: dict[tuple[str, str], str] = {}
        for pack_id, key in keys:
            lesson_id, _, card_id = key.partition("/")
            if (pack_id, lesson_id) in failed:
                continue
            try:
                pack, lesson = self.load_lesson(pack_id, lesson_id)
            except TutorError as exc:
                failed[(pack_id, lesson_id)] = str(exc)
                continue
            card = next((c for c in lesson.cards if c.id == card_id), None)
            if card is not None:
                refs[(pack_id, key)] = CardRef(pack, lesson, card)
        return refs, list(failed.values())
