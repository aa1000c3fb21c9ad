"""A pack's outline: what `list` and the app's home screen show (each lesson's title, its
exercises' ids and titles, its cards' ids), read without loading the lessons.

Loading a lesson resolves its files, validates every field and parses its code; for a
5,000-lesson pack that is seconds `list` need not spend. The outline reads only each
lesson.yaml's node tree (PyYAML's C composer) and the few values it shows, so a problem
inside a lesson body is reported where the lesson is loaded (`pack validate`, the app,
`check`), not here. The manifest is loaded and validated in full.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from tutor.packs import models as m
from tutor.packs.loader import LESSON_FILE, PackNames, _read_text, _Reporter, load_manifest
from tutor.packs.problems import Problem
from tutor.packs.yamlsrc import YamlSyntaxError, compose

if TYPE_CHECKING:
    from tutor.packs.installed import PackDistribution


@dataclass(frozen=True)
class ExerciseOutline:
    id: str
    title: str


@dataclass(frozen=True)
class CardOutline:
    id: str


@dataclass(frozen=True)
class LessonOutline:
    id: str
    title: str
    exercises: list[ExerciseOutline]
    cards: list[CardOutline]

    @property
    def card_count(self) -> int:
        return len(self.cards)


@dataclass
class PackOutline(PackNames):
    manifest: m.PackManifest
    lessons: list[LessonOutline]
    root: Path
    builtin: bool = False
    distribution: PackDistribution | None = None  # set for a pack installed with pip

    def lesson(self, lesson_id: str) -> LessonOutline | None:
        return next((lesson for lesson in self.lessons if lesson.id == lesson_id), None)


@dataclass
class _Fields:
    """A YAML mapping's values by key, each with where it starts (for a problem's position)."""

    rep: _Reporter
    path: tuple
    mapping: yaml.MappingNode  # where a missing key is reported
    nodes: dict[str, yaml.Node] = field(default_factory=dict)

    def text(self, key: str) -> str | None:
        node = self.nodes.get(key)
        if isinstance(node, yaml.ScalarNode) and node.value.strip():
            return node.value
        self._problem(key, node, "required text is missing" if node is None else "expected text")
        return None

    def items(self, key: str) -> list[yaml.Node]:
        node = self.nodes.get(key)
        if node is None:
            return []
        if isinstance(node, yaml.SequenceNode):
            return list(node.value)
        self._problem(key, node, "expected a list")
        return []

    def _problem(self, key: str, node: yaml.Node | None, message: str) -> None:
        _report(self.rep, (*self.path, key), node or self.mapping, message)


def _report(rep: _Reporter, path: tuple, node: yaml.Node | None, message: str) -> None:
    mark = node.start_mark if node is not None else None
    rep.at(path, message, line=mark.line + 1 if mark else 1, col=mark.column + 1 if mark else 1)


def _fields(node: yaml.Node | None, rep: _Reporter, path: tuple) -> _Fields | None:
    if not isinstance(node, yaml.MappingNode):
        _report(rep, path, node, "expected a mapping of fields")
        return None
    nodes = {k.value: v for k, v in node.value if isinstance(k, yaml.ScalarNode)}
    return _Fields(rep, path, node, nodes)


def _outline_lesson(root: Path, real_root: Path, lesson_id: str) -> tuple[LessonOutline | None, list[Problem]]:
    file = root / lesson_id / LESSON_FILE
    rep = _Reporter(root, None, file, real_root)
    text = _read_text(file, rep)  # bounded, and never through a link out of the pack
    if text is None:
        return None, rep.problems
    try:
        lesson = _fields(compose(text), rep, ())
    except YamlSyntaxError as exc:
        rep.at((), exc.message, line=exc.line, col=exc.col)
        return None, rep.problems
    except RecursionError:  # nesting deeper than the composer can follow
        rep.at((), "YAML nests too deep")
        return None, rep.problems
    if lesson is None:
        return None, rep.problems
    title = lesson.text("title")
    exercises = []
    for i, node in enumerate(lesson.items("exercises")):
        ex = _fields(node, rep, ("exercises", i))
        if ex is not None:
            ex_id, ex_title = ex.text("id"), ex.text("title")
            if ex_id is not None and ex_title is not None:
                exercises.append(ExerciseOutline(ex_id, ex_title))
    cards = []
    for i, node in enumerate(lesson.items("cards")):
        card = _fields(node, rep, ("cards", i))
        card_id = card.text("id") if card is not None else None
        if card_id is not None:
            cards.append(CardOutline(card_id))
    if rep.problems or title is None:
        return None, rep.problems
    return LessonOutline(lesson_id, title, exercises, cards), []


def outline_pack(root: str | Path, *, builtin: bool = False) -> tuple[PackOutline | None, list[Problem]]:
    """The pack's outline (None if its manifest is unusable) and the problems found on the way."""
    root = Path(root)
    manifest, problems = load_manifest(root)
    if manifest is None:
        return None, problems
    lessons = []
    real_root = root.resolve()
    for lesson_id in manifest.lessons:
        if not (root / lesson_id / LESSON_FILE).is_file():
            continue  # reported with the manifest
        lesson, found = _outline_lesson(root, real_root, lesson_id)
        problems += found
        if lesson is not None:
            lessons.append(lesson)
    problems.sort(key=lambda p: (p.file, p.line, p.col))
    return PackOutline(manifest, lessons, root, builtin), problems
