"""``ptfund-tutor quiz``: end to end through a pipe, and the session logic in process."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from progress_pack import write_pack

from tutor.commands.quiz import Quiz
from tutor.grading.predict import PredictOutcome
from tutor.packs.catalog import Catalog
from tutor.progress import LEECH_LAPSES, ProgressStore
from tutor.progress.scheduling import when

REPO = Path(__file__).resolve().parent.parent
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)


def cli(args: list[str], stdin: str, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PTFUND_TUTOR_HOME": str(home), "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "tutor", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )


@pytest.fixture
def pack(tmp_path) -> Path:
    return write_pack(tmp_path / "pack")


def shown_options(card_key: str, state=None) -> list[str]:
    """The copy card's options in the order a review with this schedule shows them."""
    options = ["t.view(-1)", "t.clone()"]
    from tutor.grading.cards import choice_order, review_seed
    from tutor.packs.models import ChoiceCard

    card = ChoiceCard(
        id="copy",
        type="choice",
        prompt="p",
        options=[{"text": t, "correct": t == "t.clone()", "feedback": "f"} for t in options],
    )
    return [options[i] for i in choice_order(card, review_seed("quiz-test", card_key, state))]


def test_piped_quiz_end_to_end(tmp_path, pack):
    home = tmp_path / "home"
    shown = shown_options("views/copy")
    clone = str(shown.index("t.clone()") + 1)  # its number in the shuffled order
    # --lesson keeps the built-in pack's cards (loaded too) out of the session
    r = cli(["quiz", "--pack", str(pack), "--lesson", "views", "--limit", "3"], f"{clone}\n(1,3)\nview; memory\n", home)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "0 cards due, 4 new" in out
    assert "Asking 3 of them" in out
    assert f"  1. {shown[0]}\n  2. {shown[1]}" in out  # options numbered in the order shown
    assert "Correct. clone always copies." in out
    assert "torch.Size is a tuple subclass." in out  # explanation
    assert "Wrong. 1 of 2 blanks right: blank 2 is 'storage'." in out
    assert "Answer: view; storage" in out
    assert "Session: 3 cards, 2 right, 1 wrong." in out
    assert "Next card due in 1 minute" in out
    with ProgressStore(home / "progress.sqlite3") as s:
        assert s.review_count() == 3
        assert s.card_state("quiz-test", "views/copy").reps == 1
        assert s.card_state("quiz-test", "views/blanks").lapses == 1
    # Again right away: nothing is due yet, and the remaining new cards are offered.
    r = cli(["quiz", "--pack", str(pack), "--lesson", "views"], "", home)
    assert r.returncode == 0, r.stderr
    assert "0 cards due, 1 new (up to 20 new a day; 3 started today)" in r.stdout
    assert "Stopped early; 0 answers saved." in r.stdout


def test_new_cards_only_from_lessons_opened_or_named(tmp_path, pack):
    home = tmp_path / "home"
    r = cli(["quiz", "--pack", str(pack)], "", home)
    assert r.returncode == 0, r.stderr
    assert "0 cards due, 0 new" in r.stdout
    assert "No new cards yet: " in r.stdout and "(`quiz --lesson L` adds lesson L's), or open a lesson" in r.stdout
    # naming a lesson adds its cards, for this session and later ones
    r = cli(["quiz", "--pack", str(pack), "--lesson", "views"], "", home)
    assert "0 cards due, 4 new" in r.stdout and "New cards come from Views, strides and copies." in r.stdout
    r = cli(["quiz", "--pack", str(pack)], "", home)
    assert "0 cards due, 4 new" in r.stdout  # views' four; numbers' card waits
    assert (
        "New cards come from Views, strides and copies; " in r.stdout
        and "wait in lessons you have not opened" in r.stdout
    )
    # a lesson opened in the app counts the same
    with ProgressStore(home / "progress.sqlite3") as s:
        assert s.quiz_lessons() == {("quiz-test", "views"): "named"}
        s.add_quiz_lesson("quiz-test", "numbers", "opened")
    r = cli(["quiz", "--pack", str(pack)], "", home)
    assert "0 cards due, 5 new" in r.stdout and "New cards come from Views, strides and copies and Numbers" in r.stdout


def test_end_of_input_mid_session_saves_what_was_answered(tmp_path, pack):
    home = tmp_path / "home"
    r = cli(["quiz", "--pack", str(pack), "--lesson", "views"], "t.clone()\n", home)
    assert r.returncode == 0, r.stderr
    assert "Stopped early; 1 answer saved." in r.stdout
    assert "Session: 1 card, 1 right, 0 wrong." in r.stdout
    with ProgressStore(home / "progress.sqlite3") as s:
        assert s.review_count() == 1


def test_quiz_usage_errors_are_one_line(tmp_path, pack):
    r = cli(["quiz", "--pack", str(pack), "--lesson", "nope"], "", tmp_path / "home")
    assert (
        r.returncode == 2
        and r.stderr.strip().splitlines()[-1] == "ptfund-tutor: no lesson 'nope' (see `ptfund-tutor list`)"
    )
    r = cli(["quiz", "--pack", str(pack), "--limit", "0"], "", tmp_path / "home")
    assert r.returncode == 2 and "--limit" in r.stderr and "Traceback" not in r.stderr


def test_lesson_filter(tmp_path, pack):
    r = cli(["quiz", "--pack", str(pack), "--lesson", "numbers"], "1/1000\n", tmp_path / "home")
    assert r.returncode == 0, r.stderr
    assert "0 cards due, 1 new" in r.stdout and "Session: 1 card, 1 right, 0 wrong." in r.stdout


# ---------------------------------------------------------------- in process, with a pinned clock


class Clock:
    def __init__(self, t: datetime):
        self.t = t

    def __call__(self) -> datetime:
        return self.t


def quiz(store, pack: Path, answers: str, clock: Clock, *, lesson=None, trusted=lambda p: True):
    cat = Catalog.load([str(pack)], builtin=False)
    assert not cat.problems, cat.problems
    out = io.StringIO()
    q = Quiz(store, list(cat.cards(lesson=lesson)), stdin=io.StringIO(answers), stdout=out, trusted=trusted, now=clock)
    return q, out


@pytest.fixture
def store(tmp_path):
    s = ProgressStore(tmp_path / "progress.sqlite3", fuzz=False)
    for lesson in ("views", "numbers"):  # as if opened: new cards may come from both
        s.add_quiz_lesson("quiz-test", lesson, "added", at=T0)
    yield s
    s.close()


def test_retry_on_unreadable_answer_and_empty_answer_counts_wrong(store, pack):
    clone = shown_options("views/copy").index("t.clone()") + 1
    q, out = quiz(store, pack, f"7\n{clone}\n\n", Clock(T0))
    q.run(limit=2)
    text = out.getvalue()
    assert "Answer with the number of an option, 1 to 2." in text
    assert "Correct. clone always copies." in text
    assert "Wrong. No answer given.\nAnswer: (1, 3)" in text
    assert q.tally.right == 1 and q.tally.wrong == 1


def test_choice_options_shuffle_per_review_and_stay_put_when_resumed(store, pack):
    clock = Clock(T0)
    seen = []
    for _ in range(12):
        # leave before answering, then come back: the same order
        q, out = quiz(store, pack, "", clock, lesson="views")
        q.run(limit=1)
        first = out.getvalue()
        state = store.card_state("quiz-test", "views/copy")
        shown = shown_options("views/copy", state)
        assert f"  1. {shown[0]}\n  2. {shown[1]}" in first
        # answer by the number shown for view: graded as view, with view's own feedback
        view = shown.index("t.view(-1)") + 1
        q, out = quiz(store, pack, f"{view}\n", clock, lesson="views")
        q.run(limit=1)
        assert f"  1. {shown[0]}\n  2. {shown[1]}" in out.getvalue()
        assert "Wrong. view never copies" in out.getvalue()
        assert f"Answer: {3 - view}. t.clone()" in out.getvalue()
        seen.append(tuple(shown))
        clock.t = store.card_state("quiz-test", "views/copy").due
    assert len(set(seen)) == 2  # later reviews reshuffle: both orders came up


def test_leech_points_to_the_lesson_section(store, pack):
    clock = Clock(T0)
    for _ in range(LEECH_LAPSES):
        q, out = quiz(store, pack, "t.view(-1)\n", clock, lesson="views")
        q.run(limit=1)
        clock.t = store.card_state("quiz-test", "views/copy").due
    text = out.getvalue()
    assert (
        f"You have missed this card {LEECH_LAPSES} times. Revisit lesson 'Views, strides and copies', section 'Strides'."
        in text
    )
    assert "Keeps slipping: Revisit lesson 'Views, strides and copies', section 'Strides'." in text


def test_changed_card_is_announced_and_its_history_kept(store, pack):
    store.review("quiz-test", "views/copy", True, T0 - timedelta(days=30), content_hash="old-hash")
    q, out = quiz(store, pack, "t.clone()\n", Clock(T0))
    q.run(limit=1)
    assert "1 card due" in out.getvalue()
    assert "(This card changed since you last saw it.)" in out.getvalue()
    assert len(store.reviews_for("quiz-test", "views/copy")) == 2
    q, out = quiz(store, pack, "", Clock(store.card_state("quiz-test", "views/copy").due))
    q.run()
    assert "changed since" not in out.getvalue()


def test_new_cards_respect_the_daily_limit(store, pack):
    store.update_settings(new_cards_per_day=2)
    q, out = quiz(store, pack, "t.clone()\n(1, 3)\nextra\n", Clock(T0))
    q.run()
    assert "0 cards due, 2 new (up to 2 new a day; 0 started today)." in out.getvalue()
    assert q.tally.right == 2
    q, out = quiz(store, pack, "", Clock(T0 + timedelta(minutes=1)))
    q.run()
    assert "0 cards due, 0 new" in out.getvalue() and "Next card due in 9 minutes" in out.getvalue()


class FakeKernels:
    """Stands in for the kernels predict cards run in: these tests are about the quiz's
    words around a run (the real kernels: test_predict_cards_run_in_fresh_kernels_alike)."""

    def __init__(self, outcome: PredictOutcome):
        self.outcome = outcome
        self.codes = []
        self.stopped = False

    async def predict(self, code, **kw):
        self.codes.append(code)
        return self.outcome

    async def shutdown(self):
        self.stopped = True


def _predict_quiz(store, pack, answer: str, monkeypatch, *, outcome=None, start_error=None, trusted=lambda p: True):
    import asyncio

    import tutor.commands.quiz as quiz_mod

    kernels = FakeKernels(outcome)

    def fake_kernels(self):
        if start_error:
            raise start_error
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            self._predict = kernels
        return self._loop, kernels

    monkeypatch.setattr(quiz_mod.Quiz, "_kernels", fake_kernels)
    store.update_settings(new_cards_per_day=1)
    q, out = quiz(store, pack, answer + "\n", Clock(T0), trusted=trusted)
    # only the predict card
    q.refs = {k: v for k, v in q.refs.items() if k[1] == "views/transpose-view"}
    q.run()
    q.close()
    return q, out.getvalue(), kernels


def test_predict_card_runs_the_code_and_shows_the_real_output(store, pack, monkeypatch):
    shown = "RuntimeError: view size is not compatible with input tensor's size and stride"
    outcome = PredictOutcome(output="", exception="RuntimeError", shown=shown, key="RuntimeError")
    q, text, session = _predict_quiz(store, pack, "runtimeerror", monkeypatch, outcome=outcome)
    assert "It prints:\n    " + shown in text
    assert "Correct. It raises RuntimeError." in text
    assert session.codes and "x.t().view(-1)" in session.codes[0]
    assert session.stopped  # the kernel is shut down at the end
    assert q.tally.right == 1


def test_predict_card_without_a_kernel_uses_the_stored_key(store, pack, monkeypatch):
    q, text, _ = _predict_quiz(store, pack, "RuntimeError", monkeypatch, start_error=OSError("no ipykernel"))
    assert "(Could not start a Python kernel: no ipykernel. Grading against the stored answer.)" in text
    assert q.tally.right == 1


def test_predict_card_of_an_untrusted_pack_does_not_run(store, pack, monkeypatch):
    _, text, session = _predict_quiz(
        store, pack, "error", monkeypatch, trusted=lambda p: False, outcome=PredictOutcome("", None, "x", "x")
    )
    assert "you have not trusted it" in text and not session.codes
    assert "Wrong. It does raise, but the exception to name is RuntimeError." in text


def test_when():
    assert when(T0 + timedelta(seconds=10), T0) == "now"
    assert when(T0 + timedelta(minutes=1), T0).startswith("in 1 minute (")
    assert when(T0 + timedelta(hours=5), T0).startswith("in 5 hours (")
    assert when(T0 + timedelta(days=4), T0).startswith("in 4 days (")
