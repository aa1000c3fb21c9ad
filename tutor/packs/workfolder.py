"""A folder of exercise files for ``watch``: one file per exercise, LESSON/EXERCISE.py (the
layout ``grade`` reads too), each starting with the exercise's prompt as a comment. A
starter is written once, when its file does not exist yet; a learner's file is never
overwritten (a reset keeps the old text beside it, as FILE.py.bak)."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tutor.packs.catalog import ExerciseRef

WIDTH = 88


def exercise_file(root: Path, ref: ExerciseRef) -> Path:
    """Where the exercise lives in the folder; a pack other than the built-in one gets a
    folder of its own, so lessons of the same name in two packs do not meet."""
    base = root if ref.pack.builtin else root / ref.pack.id
    return base / ref.lesson.id / f"{ref.exercise.id}.py"


def _comment(text: str) -> list[str]:
    lines: list[str] = []
    for line in text.rstrip().splitlines():
        wrapped = textwrap.wrap(line, WIDTH - 2, break_long_words=False, replace_whitespace=False) or [""]
        lines += [f"# {w}".rstrip() for w in wrapped]
    return lines


def starter_text(ref: ExerciseRef) -> str:
    """The prompt as a comment, then the starter code."""
    ex = ref.exercise
    head = [f"# {ref.key}: {ex.title}", "#", *_comment(ex.prompt), "#"]
    if ex.setup_visible and ex.shown_setup.strip():
        head += ["# The setup runs before this file:", *_comment(ex.shown_setup), "#"]
    head.append("# Save this file to check it (ptfund-tutor watch).")
    return "\n".join(head) + "\n\n" + ex.starter.rstrip() + "\n"


def write_starters(root: Path, refs: list[ExerciseRef]) -> int:
    """Create the files that do not exist yet; how many were created. Never overwrites."""
    created = 0
    for ref in refs:
        path = exercise_file(root, ref)
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            # O_EXCL: a file that appeared in the meantime (the learner's) is left alone.
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(starter_text(ref))
        created += 1
    return created


def reset(root: Path, ref: ExerciseRef) -> Path | None:
    """Put the starter back; the learner's text is kept as FILE.py.bak (returned, if any)."""
    path = exercise_file(root, ref)
    backup = None
    if path.exists():
        backup = path.with_name(path.name + ".bak")
        os.replace(path, backup)
    write_starters(root, [ref])
    return backup
