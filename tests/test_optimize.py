"""``progress optimize``: fsrs's optimizer fitted to a real review log, in a kernel."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from tutor.progress import ProgressStore
from tutor.progress.scheduling import next_interval_days, optimizer_result

# The CLI as a process that fails if it imported torch (only the kernel may).
NO_TORCH = (
    "import sys; from tutor.cli import main; rc = main(sys.argv[1:]); "
    "assert 'torch' not in sys.modules, 'the CLI imported torch'; sys.exit(rc)"
)


def cli(home: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", NO_TORCH, "--data-dir", str(home), "progress", *args],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "PTFUND_TUTOR_HOME": str(home)},
    )


def review_log(home: Path, cards: int = 60, reviews: int = 12) -> None:
    """A learner who remembers most cards, reviewing each when due (or a little late)."""
    rng = random.Random(7)
    with ProgressStore.open(home, fuzz=False) as store:
        for n in range(cards):
            at = datetime(2026, 1, 1, 9, tzinfo=timezone.utc) + timedelta(hours=n)
            for _ in range(reviews):
                state = store.review("p", f"l/c{n}", rng.random() < 0.8, at)
                at = max(state.due, at + timedelta(days=1)) + timedelta(hours=rng.randint(0, 30))


@pytest.mark.slow
def test_optimize_fits_shows_the_change_keeps_and_restores(tmp_path: Path):
    home = tmp_path / "home"
    review_log(home)
    dry = cli(home, "optimize", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "Fitted to 720 reviews." in dry.stdout and "Dry run: nothing changed." in dry.stdout
    assert "log loss" in dry.stdout and "next due in" in dry.stdout
    with ProgressStore.open(home) as store:
        assert store.settings().fsrs_parameters is None

    done = cli(home, "optimize")
    assert done.returncode == 0, done.stderr
    with ProgressStore.open(home) as store:
        fitted = store.settings().fsrs_parameters
        assert fitted is not None and store.settings().fsrs_parameters_previous is None
        from fsrs.scheduler import DEFAULT_PARAMETERS

        assert fitted != tuple(DEFAULT_PARAMETERS)
        # The fitted parameters now schedule reviews.
        state = store.review("p", "l/new", True, datetime(2027, 1, 1, tzinfo=timezone.utc))
        assert state.stability == pytest.approx(fitted[2])  # a first Good starts at parameter w2

    restored = cli(home, "optimize", "--restore")
    assert restored.returncode == 0 and "default parameters" in restored.stdout
    with ProgressStore.open(home) as store:
        assert store.settings().fsrs_parameters is None
        assert store.settings().fsrs_parameters_previous == fitted  # --restore again undoes it


def test_optimize_without_reviews_is_one_sentence(tmp_path: Path, capsys):
    from tutor.cli import main

    assert main(["--data-dir", str(tmp_path), "progress", "optimize"]) == 2
    assert "no reviews yet" in capsys.readouterr().err


def test_the_optimizer_result_is_read_from_its_marked_line():
    assert optimizer_result('noise\nptfund-optimizer-result: {"parameters": [1]}\n') == {"parameters": [1]}
    assert optimizer_result("ptfund-optimizer-result: {not json\n") is None
    assert optimizer_result("") is None
    assert next_interval_days(None, 0.9) > 1
