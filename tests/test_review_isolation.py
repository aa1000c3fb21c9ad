"""One review flow, one isolation rule: each predict card's code runs in a fresh kernel of
its own, in `pack test`, the line-by-line quiz and the app alike (tutor/grading/review.py).

The pack has two predict cards; the first changes torch's default dtype, the second's key
is what a fresh interpreter prints (float32). A kernel shared between the cards, even with
its names reset, prints float64 for the second."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest
from test_app_support import make_app, wait_for, wait_ready

from tutor.commands.quiz import Quiz
from tutor.grading.packtest import test_pack as prove_pack
from tutor.packs.catalog import Catalog
from tutor.packs.loader import check_pack
from tutor.progress import ProgressStore

pytestmark = pytest.mark.slow

PACK = {
    "pack.yaml": 'id: isolation\ntitle: Isolation\nversion: "0.1.0"\nlessons: [dtypes]\n',
    "dtypes/lesson.yaml": """\
id: dtypes
title: Default dtypes
intuition: |
  # Default dtypes
cards:
  - id: set-default
    type: predict
    prompt: What does this print?
    code: |
      import torch
      torch.set_default_dtype(torch.float64)
      print(torch.zeros(1).dtype)
    expected: torch.float64
  - id: fresh-default
    type: predict
    prompt: What does this print?
    code: |
      import torch
      print(torch.zeros(1).dtype)
    expected: torch.float32
""",
}
ANSWERS = ["torch.float64", "torch.float32"]


@pytest.fixture
def pack(tmp_path: Path) -> Path:
    root = tmp_path / "isolation"
    for rel, text in PACK.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_pack_test_runs_each_predict_card_in_a_fresh_kernel(pack: Path):
    loaded, problems = check_pack(pack)
    assert loaded is not None and not problems, problems
    report = asyncio.run(prove_pack(loaded, jobs=1, times=False))
    assert [(r.item, r.ok, r.detail) for r in report.rows] == [
        ("dtypes/set-default", True, "key matches"),
        ("dtypes/fresh-default", True, "key matches"),
    ]


def test_the_quiz_command_runs_each_predict_card_in_a_fresh_kernel(pack: Path, tmp_path: Path):
    store = ProgressStore(tmp_path / "progress.sqlite3")
    try:
        store.add_quiz_lesson("isolation", "dtypes", "named")
        refs = list(Catalog.load([str(pack)], builtin=False).cards())
        out = io.StringIO()
        quiz = Quiz(
            store, refs, stdin=io.StringIO("".join(a + "\n" for a in ANSWERS)), stdout=out, trusted=lambda p: True
        )
        try:
            tally = quiz.run()
        finally:
            quiz.close()
        text = out.getvalue()
        assert text.index("torch.set_default_dtype") < text.index("It prints:\n    torch.float64")
        assert "It prints:\n    torch.float32" in text  # the second card's own run, not the first's dtype
        assert "It prints:\n    torch.float64" in text.split("[2/2]")[0]
        assert tally.right == 2 and tally.wrong == 0, text
    finally:
        store.close()


async def test_the_app_quiz_runs_each_predict_card_in_a_fresh_kernel(pack: Path, tmp_path: Path):
    from tutor.app.screens.quiz import QuizScreen

    data = tmp_path / "data"
    with ProgressStore.open(data) as store:
        store.add_quiz_lesson("isolation", "dtypes", "named")
    app = make_app(pack, data)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, QuizScreen) and app.screen.queue, 30, "the quiz")
        quiz = app.screen
        assert [r.card.id for r in quiz.queue] == ["set-default", "fresh-default"]
        for n, answer in enumerate(ANSWERS):
            await wait_for(pilot, lambda n=n: quiz.n == n and not quiz.answered, 30, f"card {n + 1}")
            quiz.query_one("#answer").value = answer
            await pilot.press("enter")
            await wait_for(pilot, lambda: quiz.answered, 120, f"the grade of card {n + 1}")
            feedback = str(quiz.query_one("#feedback").render())
            assert f"It printed:\n{answer}" in feedback and feedback.startswith("Correct."), feedback
            await pilot.press("enter")
        await wait_for(pilot, lambda: "2 right, 0 wrong" in str(quiz.query_one("#feedback").render()), 10, "the end")
