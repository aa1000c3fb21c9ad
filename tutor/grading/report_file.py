"""The class report as the app reads it back: where ``grade --report`` last wrote one for
each pack (``class-reports.json`` in the data dir), and its report.json, validated.

No torch and no textual: the app's class report screen imports this, and ``grade``
records each report it writes. A report is the instructor's view, hidden checks included
(classreport.py builds it from verdicts decided in full).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from tutor.errors import TutorError
from tutor.files import Unreadable, read_json_file
from tutor.jsonfile import read_json, write_json

INDEX = "class-reports.json"
REPORT = "report.json"
# A report of a few hundred learners is a few megabytes; nested a few levels.
MAX_REPORT_BYTES = 64 << 20
MAX_REPORT_DEPTH = 12


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")  # a newer report may say more


class CheckRate(_Loose):
    check: str
    passed: int
    ran: int
    pass_rate: float | None


class RankedMistake(_Loose):
    id: str
    kind: str
    message: str
    learners: list[str]
    count: int
    rate: float | None = None
    exercise: str | None = None


class ExerciseRates(_Loose):
    exercise: str
    title: str
    learners: int
    submitted: int
    passed: int
    pass_rate: float | None
    checks: list[CheckRate]
    mistakes: list[RankedMistake]


class PackVersion(_Loose):
    id: str
    version: str


class ClassReport(_Loose):
    learners: int
    packs: list[PackVersion]
    exercises: list[ExerciseRates]
    mistakes: list[RankedMistake]  # every exercise's, most learners first


def remember(data: Path, folder: Path, packs: list[str]) -> None:
    """Record ``folder`` as the latest report of each of ``packs`` (OSError if it cannot)."""
    index = read_json(data / INDEX)
    reports = dict(index.get("reports") or {}) if isinstance(index, dict) else {}
    for pack in packs:
        reports[pack] = str((folder / REPORT).resolve())
    data.mkdir(parents=True, exist_ok=True)
    write_json(data / INDEX, {"reports": reports})


def recorded(data: Path, packs: list[str]) -> list[Path]:
    """The latest report of each of ``packs`` that has one, each path once."""
    index = read_json(data / INDEX)
    reports = index.get("reports") if isinstance(index, dict) else None
    if not isinstance(reports, dict):
        return []
    paths = [reports[p] for p in packs if isinstance(reports.get(p), str)]
    return [Path(p) for p in dict.fromkeys(paths)]


def load(path: Path) -> ClassReport:
    """The report at ``path``; TutorError in one sentence when it cannot be read."""
    try:
        data = read_json_file(path, max_bytes=MAX_REPORT_BYTES, max_depth=MAX_REPORT_DEPTH)
    except Unreadable as exc:
        raise TutorError(f"cannot read the class report {path}: {exc}") from None
    try:
        return ClassReport.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the top level"
        raise TutorError(
            f"{path} is not a class report of this version (at {where}: {first['msg']}); "
            "write it again with `ptfund-tutor grade --report`"
        ) from None
