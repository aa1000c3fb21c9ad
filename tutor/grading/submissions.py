"""What a class hands in: one folder per learner (``LESSON/EXERCISE.py`` files), or one
learner's ``progress export`` file (their last attempt per exercise).

Reading never runs anything; a file that cannot be used becomes a note for the instructor,
never an exception that stops the rest of the class.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tutor.errors import TutorError
from tutor.files import TooLarge, Unreadable, has_lone_surrogate, read_bounded
from tutor.grading.code_size import MAX_CODE_BYTES
from tutor.packs.catalog import ExerciseRef


@dataclass(frozen=True)
class Column:
    """One exercise of the gradebook; ``name`` is LESSON/EXERCISE (PACK:LESSON/EXERCISE when ids clash)."""

    name: str
    ref: ExerciseRef


@dataclass(frozen=True)
class Effort:
    """What a progress export says about one exercise: how many attempts, and the time from
    the first to the last (the class report's time and attempts)."""

    attempts: int
    seconds: float


@dataclass
class Learner:
    name: str
    source: Path
    code: dict[str, str] = field(default_factory=dict)  # column name -> code
    too_large: dict[str, int] = field(default_factory=dict)  # column name -> bytes
    unusable: dict[str, str] = field(default_factory=dict)  # column name -> why its code cannot run
    notes: list[str] = field(default_factory=list)  # files that match no exercise, unreadable ones
    effort: dict[str, Effort] = field(default_factory=dict)  # column name -> effort (progress exports only)


def columns_for(refs: list[ExerciseRef]) -> list[Column]:
    keys = [r.key for r in refs]
    return [Column(r.qualified if keys.count(r.key) > 1 else r.key, r) for r in refs]


def collect(root: Path, columns: list[Column]) -> list[Learner]:
    """Every learner under ``root``: each folder, and each ``*.json`` progress export."""
    root = Path(root)
    if not root.is_dir():
        raise TutorError(f"cannot read submissions in {root}: no such folder")
    learners = []
    for entry in sorted(root.iterdir(), key=lambda p: p.name):
        if entry.name.startswith("."):
            continue
        if entry.is_symlink():  # it could lead to a classmate's work or the instructor's files
            learners.append(
                Learner(entry.name, entry, notes=[f"{entry.name} is a symbolic link, which is not followed"])
            )
        elif entry.is_dir():
            learners.append(read_folder(entry, columns, name=entry.name))
        elif entry.suffix == ".json":
            learners.append(read_export(entry, columns, name=entry.stem))
    if not learners:
        raise TutorError(f"{root} holds no learner folders and no progress exports (see docs/grading.md)")
    return learners


def read_folder(folder: Path, columns: list[Column], *, name: str) -> Learner:
    learner = Learner(name, folder)
    by_path = {}
    for col in columns:
        by_path[f"{col.ref.lesson.id}/{col.ref.exercise.id}.py"] = col
        by_path[f"{col.ref.pack.id}/{col.ref.lesson.id}/{col.ref.exercise.id}.py"] = col
    for path in sorted(folder.rglob("*.py")):
        rel = path.relative_to(folder).as_posix()
        if any(part.startswith(".") or part == "__pycache__" for part in path.relative_to(folder).parts):
            continue
        found = by_path.get(rel)
        if found is None:
            learner.notes.append(f"{rel} matches no exercise in use")
            continue
        _take(learner, found, rel, path)
    return learner


def _take(learner: Learner, col: Column, rel: str, path: Path) -> None:
    # A link is never followed (it could lead to the instructor's solution or /dev/zero),
    # and only a regular file is read (a FIFO would wait forever), never past the bound.
    try:
        data = read_bounded(path, MAX_CODE_BYTES, follow_links=False)
    except TooLarge as exc:
        learner.too_large[col.name] = exc.size
        return
    except Unreadable as exc:
        learner.notes.append(f"{rel} cannot be read: {exc.reason}")
        return
    try:
        learner.code[col.name] = data.decode("utf-8")
    except UnicodeDecodeError:
        learner.notes.append(f"{rel} is not UTF-8 text")


def read_export(path: Path, columns: list[Column], *, name: str) -> Learner:
    """A ``progress export`` file: the last attempt at each exercise counts."""
    from tutor.progress.transfer import read_export as read_export_file

    learner = Learner(name, path)
    try:
        doc = read_export_file(path, follow_links=False)
    except ValueError as exc:
        learner.notes.append(f"{path.name} is not a usable progress export: {exc}")
        return learner
    by_item = {(c.ref.pack.id, c.ref.key): c for c in columns}
    last: dict[str, Any] = {}
    first: dict[str, Any] = {}
    counts: dict[str, int] = {}
    for attempt in doc.attempts:
        col = by_item.get((attempt.pack, attempt.item))
        if col is None:
            continue
        counts[col.name] = counts.get(col.name, 0) + 1
        if col.name not in last or attempt.at >= last[col.name].at:
            last[col.name] = attempt
        if col.name not in first or attempt.at < first[col.name].at:
            first[col.name] = attempt
    for col_name, attempt in last.items():
        seconds = (attempt.at - first[col_name].at).total_seconds()
        learner.effort[col_name] = Effort(counts[col_name], seconds)
    for col_name, attempt in last.items():
        if has_lone_surrogate(attempt.code):
            learner.unusable[col_name] = (
                "The code in the export holds text that is not valid Unicode (a lone surrogate), so it was not run."
            )
            continue
        size = len(attempt.code.encode("utf-8"))
        if size > MAX_CODE_BYTES:
            learner.too_large[col_name] = size
        else:
            learner.code[col_name] = attempt.code
    return learner
