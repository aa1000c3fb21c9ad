"""``grade SUBMISSIONS [--jobs N] [--out CSV] [--json] [--report DIR] [--hidden-checks all] [--reveal]``
and ``grade --gradescope DIR``.

The gradebook goes to --out (CSV) and/or stdout (CSV, or JSON with --json); progress goes
to stderr: a bar on a terminal, one line per learner otherwise. See docs/grading.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tutor.errors import TutorError
from tutor.escape import for_terminal, name_for_terminal

if TYPE_CHECKING:
    from tutor.grading.gradebook import Cell, Gradebook, Row
    from tutor.grading.submissions import Column, Learner

DEFAULT_JOBS = max(1, min(4, os.cpu_count() or 1))


def run(args: argparse.Namespace) -> int:
    from tutor.grading import submissions
    from tutor.grading.descendants import become_subreaper
    from tutor.grading.gradebook import grade_all
    from tutor.grading.gradecache import VerdictCache

    # The command line has already answered for --kernel, --jobs and SUBMISSIONS or --gradescope (tutor/cli.py).
    if args.jobs is None:
        args.jobs = DEFAULT_JOBS
    columns = _columns(args)
    if args.gradescope:
        learners = [_gradescope_learner(Path(args.gradescope), columns)]
    else:
        learners = submissions.collect(Path(args.submissions), columns)
    for learner in learners:
        for note in learner.notes:
            print(f"ptfund-tutor: {name_for_terminal(learner.name)}: {for_terminal(note)}", file=sys.stderr)

    progress = _Progress(len(learners), sum(len(lr.code) for lr in learners), enabled=not args.gradescope)
    cache = VerdictCache().load() if args.cache else None
    become_subreaper()  # before any kernel starts: orphans of learner code become ours to end
    try:
        book = asyncio.run(
            grade_all(
                learners,
                columns,
                jobs=args.jobs,
                device=args.device,
                timeout=args.timeout,
                cache=cache,
                on_verdict=progress.verdict,
                on_learner=progress.learner,
            )
        )
    finally:
        progress.close()
        _end_every_process()  # nothing of the class may run once results are written
        if cache is not None:
            cache.close()
    book.reveal, book.hide_all = args.reveal, args.hidden_checks == "all"
    if cache is not None and not args.gradescope:
        print(f"ptfund-tutor: verdicts cached in {cache.path} (reused when a file is unchanged)", file=sys.stderr)

    if args.gradescope:
        from tutor.grading.gradescope import write_results

        path = write_results(Path(args.gradescope), book)
        print(f"ptfund-tutor: wrote {path}", file=sys.stderr)
        return 0
    if args.report:
        from tutor.grading.classreport import write as write_report

        paths = write_report(Path(args.report), book)
        print(f"ptfund-tutor: wrote {', '.join(str(p) for p in paths)}", file=sys.stderr)
        _remember_report(args, Path(args.report), book)
    if args.out:
        _write(Path(args.out), book.csv_text())
    if args.json:
        print(json.dumps(book.to_json(), indent=2))
    elif not args.out:
        sys.stdout.write(book.csv_text())
    return 0


def _remember_report(args: argparse.Namespace, folder: Path, book: Gradebook) -> None:
    """The app shows the latest report of a pack it has loaded (its class report screen)."""
    from tutor.files import describe
    from tutor.grading.report_file import remember
    from tutor.paths import data_dir

    try:
        remember(data_dir(args.data_dir), folder, list(dict.fromkeys(c.ref.pack.id for c in book.columns)))
    except OSError as exc:
        print(f"ptfund-tutor: the app will not find this report: {describe(exc)}", file=sys.stderr)


def _end_every_process() -> None:
    from tutor.engine.forkclient import shutdown_shared
    from tutor.grading.descendants import end_descendants

    shutdown_shared()  # the fork server and the kernels forked from it
    end_descendants()  # what learner code left behind (a setsid daemon, say)


def _columns(args):
    """The exercises graded: those of the --pack packs (the built-in pack without any),
    narrowed to --lesson when given."""
    from tutor.commands.check import require_trust
    from tutor.grading.submissions import columns_for
    from tutor.packs.catalog import Catalog

    catalog = Catalog.load(args.pack, builtin=not args.pack)
    if catalog.problems:
        from tutor.packs.problems import PackError

        raise PackError(catalog.broken[0] if catalog.broken else Path("."), catalog.problems)
    refs = list(catalog.exercises())
    if args.lesson:
        unknown = [les for les in args.lesson if not any(r.lesson.id == les for r in refs)]
        if unknown:
            raise TutorError(f"no lesson {unknown[0]!r} in the packs in use (see `ptfund-tutor list`)")
        refs = [r for r in refs if r.lesson.id in args.lesson]
    if not refs:
        raise TutorError("the packs in use have no exercises to grade")
    for pack in {r.pack.id: r.pack for r in refs}.values():
        require_trust(pack, args)
    return columns_for(refs)


def _gradescope_learner(root: Path, columns: list[Column]) -> Learner:
    from tutor.grading import submissions

    folder = root / "submission"
    if not folder.is_dir():
        raise TutorError(f"{folder} does not exist: --gradescope wants the autograder folder (usually /autograder)")
    from tutor.grading.gradescope import learner_name

    name = learner_name(root) or "submission"
    exports = [p for p in folder.glob("*.json") if p.name != "submission_metadata.json"]
    if len(exports) == 1 and not any(folder.rglob("*.py")):
        return submissions.read_export(exports[0], columns, name=name)
    return submissions.read_folder(folder, columns, name=name)


def _write(path: Path, text: str) -> None:
    from tutor.files import describe, write_atomic

    try:
        write_atomic(path, text)
    except OSError as exc:
        raise TutorError(f"cannot write {path}: {describe(exc)}; the previous file is unchanged") from None


class _Progress:
    """A bar on a terminal; one line per finished learner when stderr is a file or a pipe."""

    def __init__(self, learners: int, files: int, *, enabled: bool = True):
        self.learners, self.files = learners, files
        self.done_learners = self.done_files = 0
        self.enabled = enabled
        self.tty = enabled and sys.stderr.isatty()

    def verdict(self, row: Row, column: Column, cell: Cell) -> None:
        self.done_files += 1
        self._draw()

    def learner(self, row: Row) -> None:
        from collections import Counter

        self.done_learners += 1
        if not self.enabled:
            return
        if self.tty:
            self._draw()
            return
        counts = Counter(cell.grade for cell in row.cells.values())
        others = ", ".join(f"{n} {grade}" for grade, n in sorted(counts.items()) if grade != "pass")
        total = sum(counts.values())
        line = f"{name_for_terminal(row.learner.name)}: {counts.get('pass', 0)}/{total} pass" + (
            f" ({others})" if others else ""
        )
        print(line, file=sys.stderr, flush=True)

    def _draw(self) -> None:
        if not self.tty:
            return
        width = 30
        filled = int(width * self.done_files / self.files) if self.files else width
        bar = "#" * filled + "-" * (width - filled)
        sys.stderr.write(
            f"\r[{bar}] {self.done_files}/{self.files} files, {self.done_learners}/{self.learners} learners"
        )
        sys.stderr.flush()

    def close(self) -> None:
        if self.tty:
            sys.stderr.write("\n")
            sys.stderr.flush()
