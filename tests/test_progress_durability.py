"""Durability with real processes (docs/architecture.md, "Reliability"): kill -9 at random moments loses nothing
committed, two writers at once lose nothing, a damaged file is moved aside.

Writers are real subprocesses (tests/progress_writer.py) that print each id only after its
commit returned; whatever reached our pipe must be in the database afterwards.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tutor.progress import ProgressStore
from tutor.progress.schema import SCHEMA_VERSION

REPO = Path(__file__).resolve().parent.parent
WRITER = Path(__file__).with_name("progress_writer.py")
ENV = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def start_writer(db: Path, tag: str, count: int | None = None) -> subprocess.Popen:
    argv = [sys.executable, str(WRITER), str(db), tag] + ([str(count)] if count is not None else [])
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, env=ENV)


def committed(lines: list[str]) -> tuple[set[int], set[str]]:
    attempts, reviews = set(), set()
    for line in lines:
        kind, _, value = line.strip().partition(" ")
        # A line cut short by the kill was never fully printed: only whole lines count.
        if not line.endswith("\n"):
            continue
        if kind == "a":
            attempts.add(int(value))
        elif kind == "r":
            reviews.add(value)
    return attempts, reviews


def check_db(db: Path, attempts: set[int], reviews: set[str]) -> None:
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        have_attempts = {r[0] for r in conn.execute("SELECT id FROM attempts")}
        have_cards = {r[0] for r in conn.execute("SELECT item FROM cards WHERE pack = 'dur'")}
        have_reviews = {r[0] for r in conn.execute("SELECT item FROM reviews WHERE pack = 'dur'")}
    finally:
        conn.close()
    assert attempts <= have_attempts, f"lost attempts {sorted(attempts - have_attempts)[:5]}"
    assert reviews <= have_cards, f"lost card states {sorted(reviews - have_cards)[:5]}"
    assert reviews <= have_reviews, f"lost reviews {sorted(reviews - have_reviews)[:5]}"


@pytest.mark.slow
def test_kill_9_at_random_moments_loses_nothing_committed(tmp_path):
    db = tmp_path / "progress.sqlite3"
    rng = random.Random(20240501)
    all_attempts: set[int] = set()
    all_reviews: set[str] = set()
    kills = 0
    round_no = 0
    while kills < 100:
        round_no += 1
        # Several writers at once, killed one by one at different moments: kills land in
        # commits, in page writes, while another process holds the lock, during startup.
        procs = [start_writer(db, f"k{round_no}w{i}") for i in range(4)]
        lines_by_proc = []
        for proc in procs:
            if rng.random() < 0.85:
                first = proc.stdout.readline()  # it is writing now
                lines_by_proc.append([first])
                time.sleep(rng.uniform(0, 0.03))  # random kill point, not a wait for anything
            else:
                lines_by_proc.append([])  # kill it wherever it is (import, open, first write)
            proc.send_signal(signal.SIGKILL)
        for proc, lines in zip(procs, lines_by_proc, strict=True):
            proc.wait()
            assert proc.returncode == -signal.SIGKILL, proc.stderr.read()
            lines.extend(proc.stdout.readlines())
            proc.stdout.close()
            proc.stderr.close()
            a, r = committed(lines)
            all_attempts |= a
            all_reviews |= r
            kills += 1
        check_db(db, all_attempts, all_reviews)
    assert len(all_attempts) > 50 and len(all_reviews) > 50  # the kills really landed mid-stream
    store = ProgressStore(db)
    assert store.notice is None
    store.close()


def test_kill_9_while_creating_a_new_database(tmp_path):
    """Killed during the first open (schema creation): the next open still works."""
    rng = random.Random(7)
    for i in range(10):
        db = tmp_path / f"p{i}.sqlite3"
        proc = start_writer(db, "c")
        time.sleep(rng.uniform(0, 0.15))  # random kill point
        proc.kill()
        proc.wait()
        lines = proc.stdout.readlines()
        proc.stdout.close()
        proc.stderr.close()
        store = ProgressStore(db)
        assert store.notice is None
        store.record_attempt("dur", "l/e", passed=True, code="", content_hash="h")
        store.close()
        a, r = committed(lines)
        check_db(db, a, r)


def test_two_processes_writing_at_once_lose_nothing(tmp_path):
    db = tmp_path / "progress.sqlite3"
    procs = [start_writer(db, f"p{i}", count=300) for i in range(2)]
    results = [p.communicate(timeout=120) for p in procs]
    for p, (_out, err) in zip(procs, results, strict=True):
        assert p.returncode == 0, err
    lines = [line + "\n" for out, _ in results for line in out.splitlines()]
    attempts, reviews = committed(lines)
    assert len(attempts) == 300 and len(reviews) == 300
    check_db(db, attempts, reviews)
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM attempts").fetchone()[0] == 300
    assert conn.execute("SELECT count(*) FROM reviews").fetchone()[0] == 300
    conn.close()


def test_a_damaged_database_is_moved_aside_with_a_clear_message(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    db = home / "progress.sqlite3"
    db.write_bytes(b"this is not a database, it is a grocery list\n" * 200)
    r = subprocess.run(
        [sys.executable, "-m", "tutor", "progress", "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**ENV, "PTFUND_TUTOR_HOME": str(home)},
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    moved = list(home.glob("progress.sqlite3.corrupt-*"))
    assert len(moved) == 1
    assert moved[0].read_bytes().startswith(b"this is not a database")
    notice = [line for line in r.stderr.splitlines() if "damaged" in line]
    assert notice and str(moved[0]) in notice[0] and "fresh one" in notice[0]
    # and the fresh one works
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()
