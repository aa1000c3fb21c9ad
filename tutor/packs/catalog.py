"""All packs a session sees: the built-in pack plus ``--pack`` folders.

A broken pack never takes the rest down: its problems are kept in ``problems`` and the
other packs load. Items are addressed ``LESSON/ITEM``, or ``PACK:LESSON/ITEM`` when ids clash.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from tutor.errors import TutorError
from tutor.packs import models as m
from tutor.packs.loader import Pack, check_pack
from tutor.packs.outline import PackOutline, outline_pack
from tutor.packs.problems import Problem
from tutor.paths import builtin_pack_dir


def content_hash(item: m.Strict) -> str:
    """A short, stable hash of an item's content, to notice when it changed."""
    return hashlib.sha256(item.model_dump_json().encode()).hexdigest()[:16]


@dataclass(frozen=True)
class ExerciseRef:
    pack: Pack
    lesson: m.Lesson
    exercise: m.Exercise

    @property
    def key(self) -> str:
        return f"{self.lesson.id}/{self.exercise.id}"

    @property
    def qualified(self) -> str:
        return f"{self.pack.id}:{self.key}"

    @property
    def content_hash(self) -> str:
        return content_hash(self.exercise)


@dataclass(frozen=True)
class CardRef:
    pack: Pack
    lesson: m.Lesson
    card: m.ChoiceCard | m.ShortCard | m.NumericCard | m.PredictCard | m.ClozeCard

    @property
    def key(self) -> str:
        return f"{self.lesson.id}/{self.card.id}"

    @property
    def qualified(self) -> str:
        return f"{self.pack.id}:{self.key}"

    @property
    def content_hash(self) -> str:
        return content_hash(self.card)


_P = TypeVar("_P", Pack, PackOutline)


def _gather(
    extra_dirs: list[str] | None, builtin: bool, read: Callable[..., tuple[_P | None, list[Problem]]]
) -> tuple[list[_P], list[Problem], list[Path]]:
    """The packs ``read`` makes of the built-in pack and ``extra_dirs``, the problems, the broken roots."""
    packs: list[_P] = []
    problems: list[Problem] = []
    broken: list[Path] = []
    roots: list[tuple[Path, bool]] = [(builtin_pack_dir(), True)] if builtin else []
    roots += [(Path(d).expanduser(), False) for d in extra_dirs or []]
    seen_ids: set[str] = set()
    for root, is_builtin in roots:
        pack, found = read(root, builtin=is_builtin)
        problems += found
        if pack is None or found:
            # A pack with problems is not offered: half a pack would mislead a learner.
            broken.append(root)
            continue
        if pack.id in seen_ids:
            problems.append(
                Problem(
                    str(root / "pack.yaml"), 1, 1, "id", f"pack id {pack.id!r} is already used by another loaded pack"
                )
            )
            broken.append(root)
            continue
        seen_ids.add(pack.id)
        packs.append(pack)
    return packs, problems, broken


@dataclass
class Outline:
    """The packs as `list` shows them, read without loading their lessons (outline.py)."""

    packs: list[PackOutline] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    broken: list[Path] = field(default_factory=list)

    @classmethod
    def load(cls, extra_dirs: list[str] | None = None, *, builtin: bool = True) -> Outline:
        return cls(*_gather(extra_dirs, builtin, outline_pack))


@dataclass
class Catalog:
    packs: list[Pack] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    broken: list[Path] = field(default_factory=list)  # packs that could not load at all

    @classmethod
    def load(cls, extra_dirs: list[str] | None = None, *, builtin: bool = True) -> Catalog:
        return cls(*_gather(extra_dirs, builtin, check_pack))

    def pack(self, pack_id: str) -> Pack | None:
        return next((p for p in self.packs if p.id == pack_id), None)

    def exercises(self, lesson: str | None = None) -> Iterator[ExerciseRef]:
        for pack in self.packs:
            for les in pack.lessons:
                if lesson is None or les.id == lesson:
                    for ex in les.exercises:
                        yield ExerciseRef(pack, les, ex)

    def cards(self, lesson: str | None = None) -> Iterator[CardRef]:
        for pack in self.packs:
            for les in pack.lessons:
                if lesson is None or les.id == lesson:
                    for card in les.cards:
                        yield CardRef(pack, les, card)

    def lessons(self) -> Iterator[tuple[Pack, m.Lesson]]:
        for pack in self.packs:
            for les in pack.lessons:
                yield pack, les

    def find_exercise(self, target: str) -> ExerciseRef:
        """Resolve ``LESSON/EXERCISE`` or ``PACK:LESSON/EXERCISE``; raise a one-sentence error."""
        pack_id, _, rest = target.rpartition(":")
        lesson_id, sep, ex_id = rest.partition("/")
        if not sep or not lesson_id or not ex_id:
            raise TutorError(f"{target!r} is not an exercise id: write LESSON/EXERCISE (see `ptfund-tutor list`)")
        found = [
            r for r in self.exercises(lesson_id) if r.exercise.id == ex_id and (not pack_id or r.pack.id == pack_id)
        ]
        if not found:
            if pack_id and self.pack(pack_id) is None:
                raise TutorError(f"no pack {pack_id!r} is loaded (see `ptfund-tutor list`)")
            if not any(les.id == lesson_id for _, les in self.lessons()):
                raise TutorError(f"no lesson {lesson_id!r} (see `ptfund-tutor list`)")
            raise TutorError(f"lesson {lesson_id!r} has no exercise {ex_id!r} (see `ptfund-tutor list`)")
        if len(found) > 1:
            names = ", ".join(r.qualified for r in found)
            raise TutorError(f"{target!r} is in several packs; write one of: {names}")
        return found[0]
