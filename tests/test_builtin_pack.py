"""The built-in curriculum: its shape, and `pack test lessons` green with real torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tutor.packs import models as m
from tutor.packs.loader import load_pack

REPO = Path(__file__).resolve().parent.parent


def test_every_lesson_has_what_the_curriculum_promises():
    pack = load_pack(REPO / "lessons")
    assert len(pack.lessons) >= 12
    for lesson in pack.lessons:
        assert lesson.intuition.strip(), lesson.id
        assert len(lesson.exercises) >= 2, lesson.id
        for ex in lesson.exercises:
            assert ex.checks and ex.hints and ex.solution.strip(), f"{lesson.id}/{ex.id}"
        assert sum(len(ex.wrong_solutions) for ex in lesson.exercises) >= 2, lesson.id
        assert len(lesson.cards) >= 6, lesson.id
        assert any(isinstance(c, m.PredictCard) for c in lesson.cards), lesson.id
        assert len({c.type for c in lesson.cards}) >= 3, f"{lesson.id}: mixed card types"


def test_right_options_are_spread_over_the_positions():
    """The quiz shuffles options, but authors copy these files: they must not teach "first is right"."""
    from collections import Counter

    pack = load_pack(REPO / "lessons")
    positions = Counter(
        next(i for i, o in enumerate(card.options) if o.correct)
        for lesson in pack.lessons
        for card in lesson.cards
        if isinstance(card, m.ChoiceCard)
    )
    total = sum(positions.values())
    assert total >= 20 and all(positions[i] <= total / 3 for i in positions), positions


def test_lists_in_cloze_cards_take_any_order():
    tensors = next(les for les in load_pack(REPO / "lessons").lessons if les.id == "tensors")
    card = next(c for c in tensors.cards if c.id == "contract-cloze")
    assert isinstance(card, m.ClozeCard) and card.unordered


@pytest.mark.slow
def test_pack_test_of_the_built_in_pack_is_green(tmp_path):
    env = {**os.environ, "PTFUND_TUTOR_HOME": str(tmp_path)}
    r = subprocess.run(
        # Mutants on: every built-in exercise kills every mutant not declared equivalent.
        [sys.executable, "-m", "tutor", "pack", "test", str(REPO / "lessons"), "--json", "--mutants", "summary"],
        capture_output=True,
        text=True,
        env=env,
        timeout=3000,
    )
    assert r.stdout, r.stderr
    report = json.loads(r.stdout)
    failed = [f"{row['item']} {row['case']}: {row['detail']}" for row in report["rows"] if not row["ok"]]
    assert not failed, "\n".join(failed)
    assert r.returncode == 0
    pack = load_pack(REPO / "lessons")
    cases = {(row["item"], row["case"]) for row in report["rows"]}
    for lesson in pack.lessons:
        for ex in lesson.exercises:
            item = f"{lesson.id}/{ex.id}"
            assert {(item, "solution"), (item, "starter")} <= cases
            assert all(r["outcome"] != "survived" for r in report["mutants"].get(item, [])), item
            assert all((item, f"wrong {i + 1}") in cases for i in range(len(ex.wrong_solutions)))
        for card in lesson.cards:
            if isinstance(card, m.PredictCard):
                assert (f"{lesson.id}/{card.id}", "predict") in cases
