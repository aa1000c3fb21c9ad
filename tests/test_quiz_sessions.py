"""Two quiz sessions on one data dir share one queue: a card is claimed in the database
before it is shown, so a card answered in one session is never asked in the other."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from tutor.progress import ProgressStore
from tutor.progress.database import FILENAME
from tutor.progress.store import CLAIM_LEASE

REPO = Path(__file__).resolve().parent.parent
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)
N_CARDS = 6

PACK_YAML = """\
id: two
title: Two sessions
version: "0.1.0"
lessons: [words]
"""

LESSON_YAML = "id: words\ntitle: Words\nintuition: |\n  # Words\ncards:\n" + "".join(
    f"  - id: c{i}\n    type: short\n    prompt: Say yes to card {i}.\n    answers: [yes]\n"
    for i in range(1, N_CARDS + 1)
)
SHOWN = re.compile(r"Say yes to card (\d+)\.")


@pytest.fixture
def store(tmp_path):
    s = ProgressStore(tmp_path / FILENAME, fuzz=False)
    yield s
    s.close()


def test_a_claimed_card_is_refused_to_another_session_until_its_lease_expires(store):
    assert store.claim_card("p", "l/c", "a", T0)
    assert store.claim_card("p", "l/c", "a", T0)  # the holder may claim again (renews)
    assert not store.claim_card("p", "l/c", "b", T0 + CLAIM_LEASE - timedelta(seconds=1))
    # a's session crashed without releasing: the lease runs out and b gets the card
    assert store.claim_card("p", "l/c", "b", T0 + CLAIM_LEASE + timedelta(seconds=1))
    assert not store.claim_card("p", "l/c", "a", T0 + CLAIM_LEASE + timedelta(seconds=2))


def test_a_card_answered_in_one_session_is_not_claimed_by_the_other(store):
    assert store.claim_card("p", "l/c", "a", T0)
    store.review("p", "l/c", True, T0 + timedelta(seconds=5))  # frees the claim
    # b drew its queue when the card was new; now it is due later, so b may not have it
    assert not store.claim_card("p", "l/c", "b", T0 + timedelta(seconds=6))
    due = store.card_state("p", "l/c").due
    assert store.claim_card("p", "l/c", "b", due)  # due again: any session may ask it


def test_release_frees_only_that_sessions_cards(store):
    assert store.claim_card("p", "l/x", "a", T0)
    assert store.claim_card("p", "l/y", "b", T0)
    store.release_claims("a")
    assert store.claim_card("p", "l/x", "b", T0)
    assert not store.claim_card("p", "l/y", "a", T0)


class QuizProcess:
    """``ptfund-tutor quiz`` as a real process, its output collected as it comes."""

    def __init__(self, pack: Path, home: Path):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tutor", "--pack", str(pack), "quiz", "--lesson", "words"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=REPO,
            env={**os.environ, "PTFUND_TUTOR_HOME": str(home), "PYTHONPATH": str(REPO)},
        )
        self._chunks: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        while ch := self.proc.stdout.read(1):
            self._chunks.append(ch)

    @property
    def out(self) -> str:
        return "".join(self._chunks)

    def shown(self) -> list[int]:
        return [int(n) for n in SHOWN.findall(self.out)]

    def wait_for_a_card(self, timeout: float = 90.0) -> int:
        deadline = time.monotonic() + timeout
        while not self.shown():
            assert self.proc.poll() is None, f"quiz exited early:\n{self.out}"
            assert time.monotonic() < deadline, f"no card within {timeout:g} s:\n{self.out}"
            time.sleep(0.05)
        return self.shown()[0]

    def answer_everything(self, timeout: float = 120.0) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write("yes\n" * N_CARDS)
        self.proc.stdin.close()
        assert self.proc.wait(timeout) == 0, self.out
        self._reader.join(timeout)
        return self.out


@pytest.mark.slow
def test_two_quiz_processes_on_one_data_dir_never_ask_the_same_card(tmp_path):
    pack = tmp_path / "pack"
    (pack / "words").mkdir(parents=True)
    (pack / "pack.yaml").write_text(PACK_YAML)
    (pack / "words" / "lesson.yaml").write_text(LESSON_YAML)
    home = tmp_path / "home"
    home.mkdir()

    a = QuizProcess(pack, home)
    try:
        first_a = a.wait_for_a_card()  # a holds it and waits for an answer
        b = QuizProcess(pack, home)
        try:
            first_b = b.wait_for_a_card()
            assert first_b != first_a
            out_a = a.answer_everything()
            out_b = b.answer_everything()
        finally:
            b.proc.kill()
    finally:
        a.proc.kill()

    shown_a, shown_b = a.shown(), b.shown()
    assert not set(shown_a) & set(shown_b), (out_a, out_b)
    assert sorted(shown_a + shown_b) == list(range(1, N_CARDS + 1))
    assert "left to another quiz session" in out_a + out_b
    with ProgressStore(home / FILENAME) as s:
        for i in range(1, N_CARDS + 1):
            assert len(s.reviews_for("two", f"words/c{i}")) == 1


async def test_the_app_quiz_skips_a_card_another_session_holds_and_frees_its_own(tmp_path):
    from test_app_support import make_app, make_pack, wait_for, wait_ready

    from tutor.app.screens.quiz import QuizScreen

    data = tmp_path / "data"
    data.mkdir()
    with ProgressStore(data / FILENAME) as s:
        s.add_quiz_lesson("apptest", "basics", "added")
        assert s.claim_card("apptest", "basics/default-dtype", "other")  # the first card of the queue
    app = make_app(make_pack(tmp_path / "pack"), data, kernels=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, QuizScreen) and app.screen.queue, 10, "the quiz")
        quiz = app.screen
        assert quiz.queue[0].key == "basics/default-dtype"
        assert quiz.n == 1 and quiz.elsewhere == 1  # shown: the second card
        shown = quiz.queue[1].key
        assert app.store is not None and not app.store.claim_card("apptest", shown, "other")
        await pilot.press("escape")  # leaving the quiz frees the card it showed
        await wait_for(pilot, lambda: not isinstance(app.screen, QuizScreen), 10, "home")
        await wait_for(pilot, lambda: app.store.claim_card("apptest", shown, "other"), 10, "the card freed")
