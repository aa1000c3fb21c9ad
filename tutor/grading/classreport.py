"""``grade --report DIR``: what the class got right and wrong, as report.json, report.md and
report.html (see docs/grading.md).

Built from the gradebook alone: pass rates per exercise and per check, the mistakes each
verdict names (by their stable ids, see mistake_ids.py) ranked by how many learners made
them, and, for learners who handed in a progress export, their attempts and time.
Everything here is plain data; report_pages.py draws it.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from pathlib import Path

from tutor import __version__
from tutor.errors import TutorError
from tutor.files import describe, write_atomic
from tutor.grading.gradebook import GRADES, MISSING, Cell, Gradebook, Row
from tutor.grading.mistake_ids import is_automatic
from tutor.grading.report_pages import html_page, markdown_page
from tutor.grading.submissions import Column

FILES = ("report.json", "report.md", "report.html")
# Every grade a cell can hold, in the order a report lists them.
GRADE_ORDER = [*dict.fromkeys(GRADES.values()), MISSING]


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def build(book: Gradebook) -> dict:
    """The report as JSON-ready data."""
    exercises = [_exercise(col, book.rows) for col in book.columns]
    ranked = [
        {"exercise": ex["exercise"], **mistake} for ex in exercises for mistake in ex["mistakes"]
    ]  # stable sort: ties keep the exercises' order and, within one, the first seen
    ranked.sort(key=lambda m: -m["count"])
    packs = {c.ref.pack.id: c.ref.pack.manifest.version for c in book.columns}
    return {
        "tutor": __version__,
        "packs": [{"id": k, "version": v} for k, v in packs.items()],
        "learners": len(book.rows),
        "exercises": exercises,
        "mistakes": ranked,
        "class": [{"learner": row.learner.name, "passed": row.passed, "total": len(book.columns)} for row in book.rows],
    }


def _exercise(col: Column, rows: list[Row]) -> dict:
    cells = [(row.learner.name, row.cells[col.name]) for row in rows]
    grades = Counter(cell.grade for _, cell in cells)
    submitted = len(cells) - grades.get(MISSING, 0)
    passed = grades.get("pass", 0)
    return {
        "exercise": col.name,
        "title": col.ref.exercise.title,
        "learners": len(cells),
        "submitted": submitted,
        "passed": passed,
        "pass_rate": _rate(passed, len(cells)),
        "pass_rate_submitted": _rate(passed, submitted),
        "grades": {g: grades.get(g, 0) for g in GRADE_ORDER},
        "checks": _checks(cells),
        "mistakes": _mistakes(col, cells, submitted),
        "effort": _effort(col, rows),
    }


def _checks(cells: list[tuple[str, Cell]]) -> list[dict]:
    """Each check's pass rate among the verdicts that ran it (a check is known by its id, or
    by its kind and place when it has none)."""
    tally: dict[str, list[int]] = {}
    for _, cell in cells:
        for index, line in enumerate(cell.verdict.checks if cell.verdict else []):
            counts = tally.setdefault(line.id or f"{line.kind} check {index + 1}", [0, 0])
            counts[0] += line.passed
            counts[1] += 1
    return [{"check": check, "passed": p, "ran": n, "pass_rate": _rate(p, n)} for check, (p, n) in tally.items()]


def _mistakes(col: Column, cells: list[tuple[str, Cell]], submitted: int) -> list[dict]:
    authored = {m.stable_id: m.message for m in col.ref.exercise.mistakes}
    found: dict[str, dict] = {}
    for name, cell in cells:
        verdict = cell.verdict
        if verdict is None:
            continue
        named: dict[str, str] = {}  # id -> message: a learner counts once per mistake
        for mistake_id, message in zip(verdict.mistake_ids, verdict.mistakes, strict=False):
            named.setdefault(mistake_id, message)
        for mistake_id, message in named.items():
            entry = found.setdefault(
                mistake_id,
                {
                    "id": mistake_id,
                    "kind": "automatic" if is_automatic(mistake_id) else "authored",
                    # a diagnosis's sentence names one learner's values: the first one seen stands for all
                    "message": authored.get(mistake_id, message),
                    "learners": [],
                },
            )
            entry["learners"].append(name)
    ranked = sorted(found.values(), key=lambda e: -len(e["learners"]))
    return [e | {"count": len(e["learners"]), "rate": _rate(len(e["learners"]), submitted)} for e in ranked]


def _effort(col: Column, rows: list[Row]) -> dict | None:
    """Attempts and minutes (first to last attempt) of the learners whose progress export
    holds this exercise; None when no one's does."""
    per = [(row.learner.name, row.learner.effort[col.name]) for row in rows if col.name in row.learner.effort]
    if not per:
        return None
    attempts = [e.attempts for _, e in per]
    minutes = [e.seconds / 60 for _, e in per]
    return {
        "learners": len(per),
        "attempts_median": statistics.median(attempts),
        "attempts_max": max(attempts),
        "minutes_median": statistics.median(minutes),
        "minutes_max": max(minutes),
        "by_learner": [{"learner": n, "attempts": e.attempts, "minutes": e.seconds / 60} for n, e in per],
    }


def write(folder: Path, book: Gradebook) -> list[Path]:
    """Write the three files into ``folder`` (made if needed); each replaces its old copy whole."""
    report = build(book)
    # ASCII JSON: a folder's name can hold a lone surrogate (bytes that are not UTF-8).
    texts = [json.dumps(report, indent=2) + "\n", markdown_page(report), html_page(report)]
    paths = [folder / name for name in FILES]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for path, text in zip(paths, texts, strict=True):
            write_atomic(path, text)
    except OSError as exc:
        raise TutorError(f"cannot write the class report in {folder}: {describe(exc)}") from None
    return paths
