"""The outline `list` reads: the same titles, exercises and card counts as loading the
lessons, without loading them (so 5,000 lessons list in about a second)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from tutor.commands import listing
from tutor.packs.catalog import Catalog, Outline

N_LESSONS = 5000

LESSON = """\
id: {id}
title: Lesson {n}
intuition: |
  # Lesson {n}
  Some prose.
exercises:
  - id: make
    title: "Make it: {n}"
    prompt: Make `t`.
    starter: "t = ...\\n"
    solution: "t = {n}\\n"
    checks:
      - kind: value
        expr: t
cards:
  - id: one
    type: short
    prompt: One?
    answers: ["1"]
  - id: two
    type: short
    prompt: Two?
    answers: ["2"]
"""


def write_pack(root: Path, n: int) -> Path:
    ids = [f"l{i:04d}" for i in range(n)]
    for i, lesson_id in enumerate(ids):
        (root / lesson_id).mkdir(parents=True)
        (root / lesson_id / "lesson.yaml").write_text(LESSON.format(id=lesson_id, n=i))
    (root / "pack.yaml").write_text(
        "id: many\ntitle: Many\nversion: '1.0'\nlessons:\n" + "".join(f"  - {x}\n" for x in ids)
    )
    return root


def test_list_of_5000_lessons_loads_none_of_them(tmp_path, parses, capsys):
    pack = write_pack(tmp_path / "many", N_LESSONS)
    args = argparse.Namespace(pack=[str(pack)], json=True, data_dir=str(tmp_path / "home"))
    assert listing.run(args) == 0
    assert [p.name for p in parses] == ["pack.yaml", "pack.yaml"]  # the two manifests, no lesson
    out = json.loads(capsys.readouterr().out)
    [many] = [p for p in out["packs"] if p["id"] == "many"]
    assert len(many["lessons"]) == N_LESSONS
    assert many["lessons"][4321] == {
        "id": "l4321",
        "title": "Lesson 4321",
        "cards": 2,
        "exercises": [{"id": "l4321/make", "title": "Make it: 4321", "status": "new"}],
    }


def test_the_outline_says_what_loading_the_lessons_says():
    outline, catalog = Outline.load(), Catalog.load()
    assert not outline.problems and not catalog.problems
    assert [(p.id, p.title, p.manifest.version) for p in outline.packs] == [
        (p.id, p.title, p.manifest.version) for p in catalog.packs
    ]
    for o, c in zip(outline.packs, catalog.packs, strict=True):
        assert [(les.id, les.title, [(e.id, e.title) for e in les.exercises], les.card_count) for les in o.lessons] == [
            (les.id, les.title, [(e.id, e.title) for e in les.exercises], len(les.cards)) for les in c.lessons
        ]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("id: a\ntitle: [x]\n", "lesson.yaml:2:8: title: expected text"),
        ("id: a\n", "lesson.yaml:1:1: title: required text is missing"),
        ("id: a\ntitle: A\nexercises:\n  - id: e\n", "lesson.yaml:4:5: exercises[0].title: required text is missing"),
        ("id: a\ntitle: A\ncards: 3\n", "lesson.yaml:3:8: cards: expected a list"),
        ("id: a\ntitle: 'A\n", "lesson.yaml:3:1: YAML syntax"),
        ("- just\n- a list\n", "lesson.yaml:1:1: expected a mapping of fields"),
        ("[" * 100_000, "lesson.yaml"),
    ],
)
def test_an_outline_problem_is_one_located_sentence(tmp_path, text, problem):
    pack = tmp_path / "p"
    (pack / "a").mkdir(parents=True)
    (pack / "a" / "lesson.yaml").write_text(text)
    (pack / "pack.yaml").write_text("id: p\ntitle: P\nversion: '1'\nlessons: [a]\n")
    outline = Outline.load([str(pack)], builtin=False)
    assert outline.packs == [] and outline.broken == [pack]
    assert len(outline.problems) == 1
    assert problem in str(outline.problems[0])
