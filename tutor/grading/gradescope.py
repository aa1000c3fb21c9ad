"""Gradescope's autograder ``results.json`` for one learner's gradebook row.

Gradescope runs ``/autograder/run_autograder`` with the submission in
``/autograder/submission`` and reads ``/autograder/results/results.json``: a list of tests,
each with a name, score, max_score, status (passed / failed), output text and visibility
(``visible``, ``hidden``, ``after_due_date`` or ``after_published``).
"""

from __future__ import annotations

import json
from pathlib import Path

from tutor.errors import TutorError
from tutor.files import Unreadable, describe, read_json_file, write_atomic
from tutor.grading.gradebook import MISSING, Cell, Gradebook
from tutor.grading.submissions import Column

# Gradescope's metadata is a few kilobytes nested a few levels; past these it is not theirs.
MAX_METADATA_BYTES = 1 << 20
MAX_METADATA_DEPTH = 20


def learner_name(root: Path) -> str | None:
    """The submitter's name from ``submission_metadata.json``; None when it has none
    (or the file is missing, not a regular file, too large, too deep or not JSON)."""
    try:
        meta = read_json_file(
            root / "submission_metadata.json",
            max_bytes=MAX_METADATA_BYTES,
            max_depth=MAX_METADATA_DEPTH,
            follow_links=False,
        )
        name = meta["users"][0]["name"]  # type: ignore[index]
    except (Unreadable, KeyError, IndexError, TypeError):
        return None
    return name if isinstance(name, str) and name else None


def results(book: Gradebook) -> dict:
    row = book.rows[0]
    tests = []
    for number, column in enumerate(book.columns, start=1):
        cell = row.cells[column.name]
        passed = cell.grade == "pass"
        if cell.grade == MISSING:
            output = f"No solution handed in: add {column.ref.key}.py to the submission."
        else:
            output = book.learner_verdict(column, cell.verdict).feedback() if cell.verdict else cell.grade
        tests.append(
            {
                "name": f"{column.name}: {column.ref.exercise.title}",
                "number": str(number),
                "score": 1.0 if passed else 0.0,
                "max_score": 1.0,
                "status": "passed" if passed else "failed",
                "output": output,
                "tags": [cell.grade],
                "visibility": "visible",
            }
        )
        tests += _check_tests(book, column, cell, number)
    notes = "\n".join(row.learner.notes)
    return {
        "score": float(row.passed),
        "output": f"{row.passed} of {len(book.columns)} exercises pass." + (f"\n{notes}" if notes else ""),
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
    }


def _check_tests(book: Gradebook, column: Column, cell: Cell, number: int) -> list[dict]:
    """A test of its own for each check whose Gradescope visibility is not ``visible``: it
    says passed or failed, and (with ``grade --reveal``) what the check said. The exercise's
    own test above carries the score; these carry none."""
    tests: list[dict] = []
    lines = cell.verdict.checks if cell.verdict else []
    for index, check in enumerate(book.graded_exercise(column).checks):
        if check.gradescope_visibility == "visible":
            continue
        line = lines[index] if index < len(lines) else None
        passed = line is not None and line.passed
        order = len(tests) + 1
        if book.reveal and line is not None:
            name = check.id or check.label or f"{check.kind} check {index + 1}"
            output = line.message
        else:
            name = f"hidden check {order}"
            output = "Passes." if passed else ("Fails." if line is not None else "Not checked.")
        tests.append(
            {
                "name": f"{column.name}: {name}",
                "number": f"{number}.{order}",
                "status": "passed" if passed else "failed",
                "output": output,
                "visibility": check.gradescope_visibility,
            }
        )
    return tests


def write_results(root: Path, book: Gradebook) -> Path:
    """Write results.json whole or not at all (a full disk or a file that cannot be
    replaced leaves the previous one as it was); TutorError in one sentence."""
    path = root / "results" / "results.json"
    try:
        write_atomic(path, json.dumps(results(book), indent=2))  # ASCII: lone surrogates are escaped
    except OSError as exc:
        raise TutorError(f"cannot write {path}: {describe(exc)}; the previous results are unchanged") from None
    return path
