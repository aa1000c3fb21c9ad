"""``progress [--json]``, ``progress export FILE``, ``progress import FILE`` as subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from progress_pack import write_pack

from tutor.progress import ProgressStore
from tutor.progress.status import exercise_statuses

REPO = Path(__file__).resolve().parent.parent
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)


def cli(args: list[str], home: Path, stdin: str = "") -> subprocess.CompletedProcess:
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
def home(tmp_path) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    with ProgressStore(h / "progress.sqlite3") as s:
        s.review("quiz-test", "views/copy", True, T0, content_hash="h")
        s.review("quiz-test", "views/shape", False, T0, content_hash="h")  # due a minute later: due now
        s.record_attempt("quiz-test", "views/make", passed=True, code="x", content_hash="e", at=T0)
        s.record_attempt("gone-pack", "l/e", passed=False, code="x", content_hash="e", at=T0)
        s.set_position("quiz-test", "views", "make")
    return h


def test_progress_json_per_lesson(tmp_path, home):
    pack = write_pack(tmp_path / "pack")
    r = cli(["progress", "--json", "--pack", str(pack)], home)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    lessons = {les["id"]: les for p in data["packs"] if p["id"] == "quiz-test" for les in p["lessons"]}
    assert lessons["views"]["cards"] == {"total": 4, "seen": 2, "due": 2, "reviews": 2, "leeches": 0}
    assert lessons["numbers"]["cards"]["seen"] == 0
    assert data["totals"]["attempts"] == 2 and data["totals"]["reviews"] == 2 and data["totals"]["due_now"] == 2
    assert data["not_in_packs"] == [
        {"pack": "gone-pack", "exercises_attempted": 1, "exercises_passed": 0, "cards_seen": 0},
        {"pack": "quiz-test", "exercises_attempted": 1, "exercises_passed": 1, "cards_seen": 0},  # no such exercise
    ]
    assert data["position"]["lesson"] == "views"
    assert data["settings"] == {"desired_retention": 0.9, "new_cards_per_day": 20}


def test_progress_text(tmp_path, home):
    pack = write_pack(tmp_path / "pack")
    r = cli(["progress", "--pack", str(pack)], home)
    assert r.returncode == 0, r.stderr
    assert "Quiz test pack [quiz-test]" in r.stdout
    assert "cards 2/4 seen, 2 due" in r.stdout
    assert "2 exercise attempts (1 exercises passed), 2 card reviews, 2 cards due now." in r.stdout
    assert "Last position: views/make [quiz-test]." in r.stdout


def test_export_then_import_elsewhere_is_idempotent(tmp_path, home):
    out = tmp_path / "exp" / "progress.json"
    out.parent.mkdir()  # export never creates folders (tests/test_cli.py)
    r = cli(["progress", "export", str(out)], home)
    assert r.returncode == 0, r.stderr and "Exported 2 attempts and 2 reviews" in r.stdout
    doc = json.loads(out.read_text())
    assert doc["format"] == "ptfund-tutor-progress" and doc["version"] == 1
    other = tmp_path / "other"
    r = cli(["progress", "import", str(out)], other)
    assert r.returncode == 0, r.stderr
    assert "Imported from" in r.stdout and "2 attempts" in r.stdout and "2 reviews" in r.stdout
    r = cli(["progress", "import", str(out)], other)
    assert r.returncode == 0 and "Nothing new" in r.stdout
    with ProgressStore(other / "progress.sqlite3") as s:
        assert s.review_count() == 2 and len(s.attempts_for("quiz-test", "views/make")) == 1
    # stdout / stdin with "-"
    r = cli(["progress", "export", "-"], home)
    assert json.loads(r.stdout)["format"] == "ptfund-tutor-progress"
    r = cli(["progress", "import", "-"], tmp_path / "third", stdin=r.stdout)
    assert r.returncode == 0 and "2 reviews" in r.stdout


@pytest.mark.parametrize(
    "content,message",
    [
        ("{not json", "is not valid JSON (line 1"),
        ('{"format": "other"}', "not a ptfund-tutor progress export"),
        ('{"format": "ptfund-tutor-progress", "version": 2}', "newer ptfund-tutor (format version 2)"),
        (
            '{"format": "ptfund-tutor-progress", "version": 1, "reviews": [{"uid": "u", "pack": "p", "item": "l/c", '
            '"rating": 9, "correct": true, "at": "2024-05-01T12:00:00+00:00"}]}',
            "reviews[0].rating",
        ),
        ("[" * 100_000 + "]" * 100_000, "nests deeper than 20 levels"),
        ('{"a": ' * 5_000 + "1" + "}" * 5_000, "nests deeper than 20 levels"),
        (
            '{"format": "ptfund-tutor-progress", "version": 1, "reviews": ' + "[" * 900 + "]" * 900 + "}",
            "nests deeper than 20 levels",
        ),
        ("\udcff", "not UTF-8 text"),
        (
            '{"format": "ptfund-tutor-progress", "version": 1, "reviews": [{"uid": "u", "pack": "p", "item": "l/c", '
            '"rating": 3, "correct": true, "at": "2024-05-01T12:00:00+00:00", "duration_ms": 1' + "0" * 30 + "}]}",
            "reviews[0].duration_ms",
        ),
    ],
    ids=["not-json", "other-format", "newer", "bad-field", "deep-list", "deep-dict", "deep-inside", "not-utf8", "huge"],
)
def test_bad_import_is_one_sentence_and_writes_nothing(tmp_path, home, content, message):
    bad = tmp_path / "bad.json"
    bad.write_bytes(content.encode("utf-8", errors="surrogateescape"))
    before = (home / "progress.sqlite3").stat().st_mtime_ns, ProgressStore(home / "progress.sqlite3").export()
    r = cli(["progress", "import", str(bad)], home)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"ptfund-tutor: cannot import {bad}: ") and message in lines[0]
    with ProgressStore(home / "progress.sqlite3") as s:
        after = s.export()
    assert {k: v for k, v in before[1].items() if k != "exported_at"} == {
        k: v for k, v in after.items() if k != "exported_at"
    }
    # a bad file does not even create a store where there was none
    r = cli(["progress", "import", str(bad)], tmp_path / "empty")
    assert r.returncode == 2 and not (tmp_path / "empty" / "progress.sqlite3").exists()


def test_import_of_missing_file(tmp_path, home):
    r = cli(["progress", "import", str(tmp_path / "nope.json")], home)
    assert r.returncode == 2 and "no such file" in r.stderr and "Traceback" not in r.stderr


def test_exercise_statuses_for_list_are_read_only(tmp_path, home):
    assert exercise_statuses(home) == {"quiz-test:views/make": "passed", "gone-pack:l/e": "attempted"}
    assert exercise_statuses(tmp_path / "nowhere") == {}
    assert not (tmp_path / "nowhere").exists()
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "progress.sqlite3").write_bytes(b"junk" * 100)
    assert exercise_statuses(damaged) == {}
    assert (damaged / "progress.sqlite3").read_bytes() == b"junk" * 100  # left for a writer to handle
