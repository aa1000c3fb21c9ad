"""The lesson cache: unchanged problem-free lessons skip parsing; any change is seen."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from tutor.packs import cache as lesson_cache
from tutor.packs.loader import check_pack
from tutor.packs.scaffold import new_pack

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def pack(tmp_path: Path) -> Path:
    return new_pack(tmp_path / "demo")


def lesson_files(parses: list[Path]) -> list[str]:
    return [p.parent.name for p in parses if p.name == "lesson.yaml"]


def snapshot(pack):
    return [lesson.model_dump() for lesson in pack.lessons], pack.origins


def test_second_load_of_the_builtin_pack_parses_nothing_and_is_identical(parses):
    first, problems = check_pack(REPO / "lessons")
    assert not problems and len(lesson_files(parses)) == len(first.lessons)
    parses.clear()
    second, problems = check_pack(REPO / "lessons")
    assert not problems
    assert lesson_files(parses) == []  # only pack.yaml was composed
    assert snapshot(second) == snapshot(first)
    uncached, _ = check_pack(REPO / "lessons", cache=False)
    assert len(lesson_files(parses)) == len(first.lessons)
    assert snapshot(uncached) == snapshot(first)


def test_a_changed_referenced_file_is_parsed_again_and_its_problem_reported(pack: Path, parses):
    assert check_pack(pack)[1] == []
    solution = pack / "first-steps" / "solution_zeros.py"
    text = solution.read_text()
    # same size and same mtime: only the content says it changed
    stat = solution.stat()
    broken = text.replace("torch.float64", "torch.float64(", 1)[: len(text)]
    assert len(broken) == len(text)
    solution.write_text(broken)
    os.utime(solution, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    parses.clear()
    _, problems = check_pack(pack)
    assert lesson_files(parses) == ["first-steps"]
    assert [(Path(p.file).name, p.line, p.message) for p in problems] == [
        ("solution_zeros.py", 3, "solution does not parse: invalid syntax")
    ]


def test_a_lesson_with_problems_is_never_remembered(pack: Path, parses):
    yaml_file = pack / "first-steps" / "lesson.yaml"
    yaml_file.write_text(yaml_file.read_text().replace("title:", "titel:", 1))
    first = check_pack(pack)[1]
    second = check_pack(pack)[1]
    assert first == second and len(first) >= 1
    assert lesson_files(parses) == ["first-steps", "first-steps"]


def test_an_edit_then_its_undo_reuse_what_was_remembered(pack: Path, parses):
    yaml_file = pack / "first-steps" / "lesson.yaml"
    original = yaml_file.read_text()
    check_pack(pack)
    yaml_file.write_text(original.replace("title:", "title: New,", 1))
    edited, problems = check_pack(pack)
    assert not problems and edited.lessons[0].title.startswith("New,")
    yaml_file.write_text(original)
    parses.clear()
    restored, _ = check_pack(pack)
    assert not restored.lessons[0].title.startswith("New,")
    assert lesson_files(parses) == ["first-steps"]  # the cache holds the newest version only


def test_corrupt_or_unwritable_cache_only_means_the_slow_way(pack: Path, parses, tmp_path: Path, monkeypatch):
    cache_root = tmp_path / "cache"
    monkeypatch.setenv("PTFUND_TUTOR_CACHE", str(cache_root))
    check_pack(pack)
    [cache_file] = (cache_root / "packs").iterdir()
    cache_file.write_bytes(b"\x80\x04not a pickle")
    parses.clear()
    loaded, problems = check_pack(pack)
    assert not problems and loaded.lessons and lesson_files(parses) == ["first-steps"]
    parses.clear()
    check_pack(pack)
    assert lesson_files(parses) == []  # rewritten after the corrupt file

    # a readable pickle whose entries are not what this code writes
    stored = pickle.loads(cache_file.read_bytes())
    stored["lessons"] = {lesson_id: {"files": 5} for lesson_id in stored["lessons"]}
    cache_file.write_bytes(pickle.dumps(stored))
    loaded, problems = check_pack(pack)
    assert not problems and [les.id for les in loaded.lessons] == ["first-steps"]

    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("PTFUND_TUTOR_CACHE", str(blocked))
    loaded, problems = check_pack(pack)
    assert not problems and loaded.lessons


def test_a_new_loader_version_revalidates_everything(pack: Path, parses, monkeypatch):
    check_pack(pack)
    monkeypatch.setattr(lesson_cache, "fingerprint", lambda: "another version of the validator")
    parses.clear()
    check_pack(pack)
    assert lesson_files(parses) == ["first-steps"]


def test_positions_follow_the_working_folder_of_a_relative_path(pack: Path, monkeypatch):
    monkeypatch.chdir(pack.parent)
    first, _ = check_pack(Path("demo"))
    monkeypatch.chdir(pack)
    second, _ = check_pack(Path("."))
    inline = [k for k, pos in second.origins.items() if pos.file.name == "lesson.yaml"]
    assert inline
    for key in inline:
        assert (Path.cwd() / second.origins[key].file).resolve() == (pack.parent / first.origins[key].file).resolve()


def test_cli_validate_no_cache_neither_reads_nor_writes_the_cache(pack: Path, tmp_path: Path):
    cache_root = tmp_path / "c"
    env = {**os.environ, "PTFUND_TUTOR_CACHE": str(cache_root)}

    def validate(*flags):
        r = subprocess.run(
            [sys.executable, "-m", "tutor", "pack", "validate", *flags, str(pack)],
            capture_output=True,
            text=True,
            env=env,
            cwd=REPO,
            timeout=120,
        )
        assert r.returncode == 0 and "no problems" in r.stdout, r.stdout + r.stderr

    validate("--no-cache")
    assert not cache_root.exists()
    validate()
    assert len(list((cache_root / "packs").iterdir())) == 1


def test_caches_of_packs_unused_for_a_month_are_deleted(pack: Path, tmp_path: Path, monkeypatch):
    cache_root = tmp_path / "cache"
    monkeypatch.setenv("PTFUND_TUTOR_CACHE", str(cache_root))
    check_pack(pack)
    [own] = (cache_root / "packs").iterdir()
    month_ago = os.stat(own).st_mtime - lesson_cache.STALE_AFTER_S - 60
    old, recent = cache_root / "packs" / "old.pickle", cache_root / "packs" / "recent.pickle"
    old.write_bytes(b"x")
    recent.write_bytes(b"x")
    os.utime(old, (month_ago, month_ago))
    os.utime(own, (month_ago, month_ago))
    check_pack(pack)  # unchanged: only marks its own cache as used
    assert old.exists() and os.stat(own).st_mtime > month_ago
    (pack / "first-steps" / "intuition.md").write_text("## Changed\n\nNew text.\n")
    check_pack(pack)  # a write: sweeps caches not used for a month
    assert not old.exists() and recent.exists() and own.exists()
