"""``grade``: every learner's file verified in a fresh kernel of its own, N at a time.

Each verification takes a kernel from the pool (warm spares, started ahead) and throws it
away afterwards, so one learner's crash, endless loop or flood of output can only ever
decide that one verdict. Verdicts already reached for the same code are reused
(see gradecache.py).
"""

from __future__ import annotations

import asyncio
import csv
import io
from collections.abc import Callable
from dataclasses import dataclass, field

from tutor import __version__
from tutor.engine.output import cut_text
from tutor.escape import for_csv
from tutor.grading.code_size import MAX_CODE_BYTES
from tutor.grading.confirm import verify_confirmed
from tutor.grading.gradecache import VerdictCache, verdict_key
from tutor.grading.hiding import conceal
from tutor.grading.submissions import Column, Learner
from tutor.grading.verdict import Verdict
from tutor.packs import models as m

OUTPUT_KEPT = 20_000  # characters of each verdict's output a gradebook keeps

# A verdict's status as the gradebook writes it (the pack's own fault counts as an error:
# the instructor sees the headline in --json).
GRADES = {
    "pass": "pass",
    "fail": "fail",
    "error": "error",
    "authoring-error": "error",
    "timeout": "timeout",
    "crashed": "crash",
}
MISSING = "missing"


@dataclass
class Cell:
    grade: str
    verdict: Verdict | None = None
    cached: bool = False


@dataclass
class Row:
    learner: Learner
    cells: dict[str, Cell] = field(default_factory=dict)

    @property
    def passed(self) -> int:
        return sum(cell.grade == "pass" for cell in self.cells.values())


@dataclass
class Gradebook:
    columns: list[Column]
    rows: list[Row]
    # What the learners' results say of hidden checks (hiding.py): verdicts are kept in full
    # (the class report counts every check); each learner's is concealed when written.
    reveal: bool = False  # grade --reveal: hidden checks described in full
    hide_all: bool = False  # grade --hidden-checks all

    def graded_exercise(self, column: Column) -> m.Exercise:
        """The column's exercise with this grading's hidden-checks policy applied."""
        exercise = column.ref.exercise
        return m.every_check_hidden(exercise) if self.hide_all else exercise

    def learner_verdict(self, column: Column, verdict: Verdict) -> Verdict:
        """The verdict as this grading shows it to the learner."""
        return verdict if self.reveal else conceal(verdict, self.graded_exercise(column))

    def csv_text(self) -> str:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        # Names come from the class's files: a name like =HYPERLINK(...) must stay text.
        writer.writerow([for_csv(v) for v in ["learner", *(c.name for c in self.columns), "passed", "total"]])
        for row in self.rows:
            grades = [row.cells[c.name].grade for c in self.columns]
            writer.writerow([for_csv(v) for v in [row.learner.name, *grades, row.passed, len(self.columns)]])
        return out.getvalue()

    def to_json(self) -> dict:
        packs = {c.ref.pack.id: c.ref.pack.manifest.version for c in self.columns}
        return {
            "tutor": __version__,
            "packs": [{"id": k, "version": v} for k, v in packs.items()],
            "exercises": [c.name for c in self.columns],
            "learners": [
                {
                    "learner": row.learner.name,
                    "source": str(row.learner.source),
                    "passed": row.passed,
                    "total": len(self.columns),
                    "notes": row.learner.notes,
                    "verdicts": {
                        name: {"grade": cell.grade, "cached": cell.cached}
                        | (self.learner_verdict(column, cell.verdict).to_json() if cell.verdict else {})
                        for column in self.columns
                        for name, cell in [(column.name, row.cells[column.name])]
                    },
                }
                for row in self.rows
            ],
        }


def too_large_verdict(size: int) -> Verdict:
    return Verdict(
        "error",
        f"The file is {size:,} bytes, over the {MAX_CODE_BYTES:,}-byte limit for a solution, so it was not run.",
    )


@dataclass
class Task:
    row: Row
    column: Column
    code: str
    key: str


async def grade_all(
    learners: list[Learner],
    columns: list[Column],
    *,
    jobs: int = 2,
    device: str | None = None,
    timeout: float | None = None,
    cache: VerdictCache | None = None,
    on_verdict: Callable[[Row, Column, Cell], None] = lambda row, col, cell: None,
    on_learner: Callable[[Row], None] = lambda row: None,
) -> Gradebook:
    """Fill the gradebook; ``on_learner`` is called once per learner, as soon as the last of
    their verdicts is in (learners whose verdicts are all cached come first)."""
    rows = [Row(learner) for learner in learners]
    todo: list[Task] = []
    left: dict[int, int] = {}
    for row in rows:
        learner = row.learner
        for col in columns:
            if col.name in learner.too_large:
                row.cells[col.name] = Cell("error", too_large_verdict(learner.too_large[col.name]))
            elif col.name in learner.unusable:
                row.cells[col.name] = Cell("error", Verdict("error", learner.unusable[col.name]))
            elif col.name not in learner.code:
                row.cells[col.name] = Cell(MISSING)
            else:
                code = learner.code[col.name]
                key = verdict_key(col.ref, code, timeout=timeout, device=device)
                hit = cache.get(key) if cache is not None else None
                if hit is not None:
                    row.cells[col.name] = cell = Cell(GRADES[hit.status], hit, cached=True)
                    on_verdict(row, col, cell)
                else:
                    todo.append(Task(row, col, code, key))
                    left[id(row)] = left.get(id(row), 0) + 1
    for row in rows:
        if id(row) not in left:
            on_learner(row)
    if todo:
        await _verify_all(todo, jobs, device, timeout, cache, left, on_verdict, on_learner)
    for row in rows:  # keep the gradebook's column order whatever order verdicts came in
        row.cells = {c.name: row.cells[c.name] for c in columns}
    return Gradebook(columns, rows)


LEARNER_BLOCK = 8  # learners graded together, exercise by exercise


async def _verify_all(
    todo: list[Task],
    jobs: int,
    device: str | None,
    timeout: float | None,
    cache: VerdictCache | None,
    left: dict[int, int],
    on_verdict: Callable[[Row, Column, Cell], None],
    on_learner: Callable[[Row], None],
) -> None:
    from tutor.engine import KernelPool
    from tutor.grading.verify import KERNELS_PER_VERIFICATION, Verifier

    jobs = max(1, min(jobs, len(todo)))
    # Exercise by exercise within blocks of learners: the judge kept from one file serves the
    # next files of its exercise, and learners still finish block by block (progress lines).
    learner_at: dict[int, int] = {}
    column_at: dict[int, int] = {}
    for task in todo:
        learner_at.setdefault(id(task.row), len(learner_at))
        column_at.setdefault(id(task.column), len(column_at))
    todo = sorted(
        todo, key=lambda t: (learner_at[id(t.row)] // LEARNER_BLOCK, column_at[id(t.column)], learner_at[id(t.row)])
    )
    # A learner's kernel per file; a judge per worker (kept from exercise to exercise while
    # it stays clean, verify.Verifier), more only when one is not: taken past the demand.
    judges = min(len(todo), jobs)
    pool = KernelPool(device=device, size=jobs * KERNELS_PER_VERIFICATION, demand=len(todo) + judges, recover=False)
    verifier = Verifier(pool, device=device, reuse_judges=True)
    queue: asyncio.Queue[Task] = asyncio.Queue()
    for task in todo:
        queue.put_nowait(task)

    async def worker() -> None:
        while not queue.empty():
            task = queue.get_nowait()
            # In full: the cache and the class report keep every check; Gradebook conceals.
            exercise = m.every_check_shown(task.column.ref.exercise)
            verdict = await verify_confirmed(verifier, exercise, task.code, timeout=timeout)
            # What the code printed, shortened for --json: a class of floods must not add up in memory.
            verdict.output = cut_text(verdict.output, OUTPUT_KEPT)
            cell = Cell(GRADES.get(verdict.status, "error"), verdict)
            task.row.cells[task.column.name] = cell
            if cache is not None:
                cache.put(task.key, verdict)
            on_verdict(task.row, task.column, cell)
            left[id(task.row)] -= 1
            if left[id(task.row)] == 0:
                on_learner(task.row)

    # A failure ends the run; the verdicts so far are in the cache, so a rerun resumes there.
    await verifier.fan_out(jobs, worker)
