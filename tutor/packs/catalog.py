"""All packs a session sees: the built-in pack, the packs installed with pip, and
``--pack`` folders; a translation offered in place of the pack it translates.

A broken pack never takes the rest down: its problems are kept in ``problems`` and the
other packs load. Items are addressed ``LESSON/ITEM``, or ``PACK:LESSON/ITEM`` when ids clash.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from tutor.errors import TutorError
from tutor.packs import models as m
from tutor.packs.loader import Pack, check_pack
from tutor.packs.outline import PackOutline, outline_pack
from tutor.packs.problems import Problem
from tutor.paths import builtin_pack_dir

if TYPE_CHECKING:
    from tutor.packs.installed import PackDistribution


def content_hash(item: m.Strict) -> str:
    """A short, stable hash of an item's content, to notice when it changed."""
    # A card's probe is for pack test, never shown: adding one does not change the card.
    return hashlib.sha256(item.model_dump_json(exclude={"probe"}).encode()).hexdigest()[:16]


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
    card: m.Card

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


@dataclass
class _Gathered:
    packs: list = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    broken: list[Path] = field(default_factory=list)
    translations: list = field(default_factory=list)
    languages: dict[str, list[str]] = field(default_factory=dict)


def _gather(
    extra_dirs: list[str] | None,
    builtin: bool,
    installed: bool | None,
    language: str | None,
    read: Callable[..., tuple[_P | None, list[Problem]]],
    mismatch: Callable[[_P, _P], str | None] | None = None,
) -> _Gathered:
    """The packs ``read`` makes of the built-in pack, the pip-installed packs (``installed``:
    default as ``builtin``) and ``extra_dirs``, with the problems and the broken roots; a
    translation replaces the pack it translates when its language is ``language``."""
    from tutor.packs.installed import installed_packs

    out = _Gathered()
    roots: list[tuple[Path, bool, PackDistribution | None]] = [(builtin_pack_dir(), True, None)] if builtin else []
    if builtin if installed is None else installed:
        found, problems = installed_packs()
        out.problems += problems
        roots += [(root, False, dist) for root, dist in found]
    roots += [(Path(d).expanduser(), False, None) for d in extra_dirs or []]
    seen_ids: set[str] = set()
    for root, is_builtin, dist in roots:
        pack, found_problems = read(root, builtin=is_builtin)
        out.problems += found_problems
        if pack is None or found_problems:
            # A pack with problems is not offered: half a pack would mislead a learner.
            out.broken.append(root)
            continue
        pack.distribution = dist
        if pack.id in seen_ids:
            out.problems.append(
                Problem(
                    str(root / "pack.yaml"), 1, 1, "id", f"pack id {pack.id!r} is already used by another loaded pack"
                )
            )
            out.broken.append(root)
            continue
        seen_ids.add(pack.id)
        out.packs.append(pack)
    _apply_translations(out, language, mismatch)
    return out


def _apply_translations(out: _Gathered, language: str | None, mismatch: Callable[..., str | None] | None) -> None:
    for tr in [p for p in out.packs if p.manifest.translates]:
        out.packs.remove(tr)
        original = next((p for p in out.packs if p.id == tr.manifest.translates), None)
        where = str(tr.root / "pack.yaml")
        if original is None:
            out.problems.append(
                Problem(where, 1, 1, "translates", f"translates {tr.manifest.translates!r}, which is not loaded")
            )
            continue
        problem = mismatch(original, tr) if mismatch is not None else None
        if problem:
            out.problems.append(Problem(where, 1, 1, "translates", problem))
            out.broken.append(tr.root)
            continue
        out.translations.append(tr)
        out.languages.setdefault(original.id, [original.manifest.language]).append(tr.manifest.language)
        if language and tr.manifest.language == language and original.manifest.language != language:
            # Offered under the original's id, so progress and schedules carry across languages.
            manifest = tr.manifest.model_copy(update={"id": original.id})
            out.packs[out.packs.index(original)] = replace(tr, manifest=manifest, builtin=False)


def languages_of(packs: list, translated: dict[str, list[str]], pack_id: str) -> list[str]:
    """The languages a pack is available in: its own, then its loaded translations'."""
    pack = next((p for p in packs if p.id == pack_id), None)
    return translated.get(pack_id, [pack.manifest.language] if pack is not None else [])


@dataclass
class Outline:
    """The packs as `list` shows them, read without loading their lessons (outline.py).
    A translation's lessons are not compared with its original's here: loading does that."""

    packs: list[PackOutline] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    broken: list[Path] = field(default_factory=list)
    _languages: dict[str, list[str]] = field(default_factory=dict, repr=False)

    @classmethod
    def load(
        cls,
        extra_dirs: list[str] | None = None,
        *,
        builtin: bool = True,
        installed: bool | None = None,
        language: str | None = None,
    ) -> Outline:
        got = _gather(extra_dirs, builtin, installed, language, outline_pack)
        return cls(got.packs, got.problems, got.broken, got.languages)

    def languages(self, pack_id: str) -> list[str]:
        return languages_of(self.packs, self._languages, pack_id)


@dataclass
class Catalog:
    packs: list[Pack] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    broken: list[Path] = field(default_factory=list)  # packs that could not load at all

    # packs that translate a loaded pack (pack.yaml `translates`), offered or not
    translations: list[Pack] = field(default_factory=list)
    _languages: dict[str, list[str]] = field(default_factory=dict, repr=False)

    @classmethod
    def load(
        cls,
        extra_dirs: list[str] | None = None,
        *,
        builtin: bool = True,
        installed: bool | None = None,
        language: str | None = None,
    ) -> Catalog:
        """The built-in pack, the packs installed with pip (``installed``: default as
        ``builtin``) and the folders given; a translation replaces the pack it translates
        when its language is ``language`` (the learner's setting)."""
        got = _gather(extra_dirs, builtin, installed, language, check_pack, translation_mismatch)
        return cls(got.packs, got.problems, got.broken, got.translations, got.languages)

    def languages(self, pack_id: str) -> list[str]:
        return languages_of(self.packs, self._languages, pack_id)

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
                raise TutorError(f"no pack {pack_id!r} is loaded{self._broken_note()} (see `ptfund-tutor list`)")
            if not any(les.id == lesson_id for _, les in self.lessons()):
                raise TutorError(f"no lesson {lesson_id!r}{self._broken_note()} (see `ptfund-tutor list`)")
            raise TutorError(f"lesson {lesson_id!r} has no exercise {ex_id!r} (see `ptfund-tutor list`)")
        if len(found) > 1:
            names = ", ".join(r.qualified for r in found)
            raise TutorError(f"{target!r} is in several packs; write one of: {names}")
        return found[0]

    def _broken_note(self) -> str:
        """Where a pack could not load, what the learner looked for may be in it: say so."""
        if not self.broken:
            return ""
        first = f": {sorted(self.problems, key=lambda p: (p.file, p.line, p.col))[0]}" if self.problems else ""
        return f" among the loaded packs; {len(self.broken)} pack(s) could not load{first}"


def translation_mismatch(original: Pack, translation: Pack) -> str | None:
    """One sentence saying how a translation's ids differ from its original's, or None."""
    if [les.id for les in translation.lessons] != [les.id for les in original.lessons]:
        return f"a translation of {original.id!r} has the same lessons in the same order; this one has other lessons"
    for les, tr in zip(original.lessons, translation.lessons, strict=True):
        for what, a, b in (
            ("exercises", [e.id for e in les.exercises], [e.id for e in tr.exercises]),
            ("cards", [(c.id, c.type) for c in les.cards], [(c.id, c.type) for c in tr.cards]),
        ):
            if a != b:
                return f"lesson {les.id!r}: a translation has the same {what} (ids and types) as {original.id!r}"
    return None
