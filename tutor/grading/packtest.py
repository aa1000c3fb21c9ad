"""``pack test DIR``: prove a pack with real torch.

For every exercise: the reference solution passes, the starter fails, every wrong solution
fails and its feedback contains what the author said it must (``expect``). Every accepted solution passes too. For every
predict card: the stored key still matches what torch prints now.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tutor.grading import packtimes
from tutor.grading.verdict import Verdict
from tutor.packs import models as m
from tutor.packs.loader import Pack, check_pack
from tutor.packs.problems import PackError

if TYPE_CHECKING:
    from tutor.engine.session import KernelSession
    from tutor.grading.verify import Verifier


@dataclass
class Row:
    item: str  # LESSON/ITEM
    case: str  # "solution", "starter", "wrong 1", "predict"
    ok: bool
    detail: str = ""
    seconds: float = 0.0


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.rows)


Echo = Callable[[Row], None]  # told each row as it is decided (the command prints it)


def _normalise(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


SAME_DATA = (
    "passes, but its second world gives the reference the same data as the first (a setup without "
    "random draws), so a typed-in answer would pass too: add a variant, or second_world: false with "
    'a reason (docs/pack-format.md, "A second world")'
)


def judge_solution(v: Verdict, *, reference: bool = False) -> tuple[bool, str]:
    if v.passed and reference and v.worlds_alike:
        return False, SAME_DATA
    if v.passed:
        return True, "passes"
    return False, _first_problem(v)


def judge_must_fail(v: Verdict, expect: str | None) -> tuple[bool, str]:
    if v.status == "authoring-error":
        return False, v.headline
    if v.passed:
        return False, "passes, but must fail"
    text = v.feedback()
    if expect and expect not in text:
        return False, f"fails, but the feedback lacks {expect!r}; it says: {_first_problem(v)}"
    return True, "fails as it should" + (f" ({expect!r} shown)" if expect else "")


def _first_problem(v: Verdict) -> str:
    for msg in v.mistakes:
        return msg
    for c in v.checks:
        if not c.passed:
            return c.message
    return v.headline


async def _run_cases(verifier: Verifier, lesson: m.Lesson, ex: m.Exercise, report: Report, echo: Echo) -> None:
    item = f"{lesson.id}/{ex.id}"
    cases: list[tuple[str, str, str | None, bool]] = [("solution", ex.solution, None, True)]
    cases.append(("starter", ex.starter, None, False))
    cases += [(f"wrong {i + 1}", w.code, w.expect, False) for i, w in enumerate(ex.wrong_solutions)]
    cases += [(f"accepted {i + 1}", code, None, True) for i, code in enumerate(ex.accepted_solutions)]
    for case, code, expect, must_pass in cases:
        started = time.perf_counter()
        verdict = await verifier.verify(ex, code)
        ok, detail = (
            judge_solution(verdict, reference=case == "solution") if must_pass else judge_must_fail(verdict, expect)
        )
        row = Row(item, case, ok, detail, time.perf_counter() - started)
        report.rows.append(row)
        echo(row)


async def _test_predict_cards(session: KernelSession, lesson: m.Lesson, report: Report, echo: Echo) -> None:
    from tutor.grading.predict import run_predict

    for card in lesson.cards:
        if not isinstance(card, m.PredictCard):
            continue
        started = time.perf_counter()
        # Each card runs in a namespace of its own so cards cannot lean on each other.
        await session.execute("%reset -f", silent=True)
        outcome = await run_predict(session, card.code)
        if not outcome.ok:
            ok, detail = False, outcome.problem or "did not finish"
        elif _normalise(outcome.key) == _normalise(card.expected):
            ok, detail = True, "key matches"
        else:
            ok, detail = False, f"stored key is stale: torch now gives {outcome.key!r}, the card says {card.expected!r}"
        row = Row(f"{lesson.id}/{card.id}", "predict", ok, detail, time.perf_counter() - started)
        report.rows.append(row)
        echo(row)


def default_jobs() -> int:
    """One worker per core this process may use."""
    from tutor.engine.pool import usable_cores

    return usable_cores()


async def test_pack(
    pack: Pack,
    *,
    lesson: str | None = None,
    device: str | None = None,
    jobs: int | None = None,
    echo: Echo = lambda row: None,
    times: bool = True,
) -> Report:
    """Prove the pack with ``jobs`` workers (default: one per core), sharing one pool.

    Every case of an exercise is verified as ``check`` verifies a learner's code: a fresh
    learner's kernel and a judge's kernel (judging.py), so what passes here passes there;
    the judge, which never runs the cases' code, serves all of one exercise's cases.
    A lesson's predict cards run in one fresh kernel. Rows come out in the pack's order whatever order the workers finish in; ``echo`` sees
    each as it is done. Exercises start slowest first by their times in the pack's last
    run (``times``: read and record them; packtimes.py).
    """
    from tutor.engine.pool import KernelPool
    from tutor.grading.verify import KERNELS_PER_VERIFICATION, Verifier

    lessons = [les for les in pack.lessons if lesson is None or les.id == lesson]
    items: list[tuple[m.Lesson, m.Exercise | None]] = []
    for les in lessons:
        items += [(les, ex) for ex in les.exercises]
        if any(isinstance(card, m.PredictCard) for card in les.cards):
            items.append((les, None))  # the lesson's predict cards
    parts = [Report() for _ in items]
    if not items:
        return Report()
    jobs = max(1, min(jobs or default_jobs(), len(items)))
    # Every case is a verification as `check` makes it: a fresh learner's kernel, and the
    # exercise's judge (kept from one case to the next); predict cards take one kernel.
    exercises = [ex for _, ex in items if ex is not None]
    cases = sum(2 + len(ex.wrong_solutions) + len(ex.accepted_solutions) for ex in exercises)
    predicts = len(items) - len(exercises)
    pool = KernelPool(device=device, size=jobs * KERNELS_PER_VERIFICATION, demand=cases + len(exercises) + predicts)
    verifier = Verifier(pool, device=device, reuse_judges=True)
    keys = [f"{les.id}/{ex.id if ex is not None else '(predict cards)'}" for les, ex in items]
    last_times = packtimes.load(pack.root) if times else {}
    queue = [(i, items[i]) for i in packtimes.slowest_first(keys, last_times)]
    queue.reverse()
    took: dict[str, float] = {}

    async def worker() -> None:
        while queue:
            index, (les, ex) = queue.pop()
            started = time.perf_counter()
            if ex is not None:
                await _run_cases(verifier, les, ex, parts[index], echo)
                verifier.drop_judges(ex)
            else:
                kernel = await pool.take()
                try:
                    await _test_predict_cards(kernel, les, parts[index], echo)
                finally:
                    pool.give_back(kernel)
            took[keys[index]] = time.perf_counter() - started

    await verifier.fan_out(jobs, worker)
    if times:
        packtimes.save(pack.root, took if lesson is None else {**last_times, **took})
    return Report([row for part in parts for row in part.rows])


def run_pack_test(args: argparse.Namespace, before_run: Callable[[Pack], None] = lambda pack: None) -> int:
    """``before_run(pack)`` may refuse (raise) before any of the pack's code runs: the trust question."""
    from tutor.errors import TutorError
    from tutor.paths import builtin_pack_dir

    # The built-in pack ships with the tutor, so it needs no trust wherever it is tested from.
    builtin = Path(args.dir).resolve() == builtin_pack_dir().resolve()
    pack, problems = check_pack(args.dir, builtin=builtin, cache=args.cache)
    if args.lesson and pack is not None:
        # Testing one lesson needs only that lesson to be sound (authors work lesson by lesson).
        folder = (Path(args.dir) / args.lesson).resolve()
        problems = [p for p in problems if folder in Path(p.file).resolve().parents]
        if not problems and pack.lesson(args.lesson) is None:
            raise TutorError(f"pack {pack.id} has no lesson {args.lesson!r}")
    if problems or pack is None:
        raise PackError(Path(args.dir), problems)
    before_run(pack)
    width = max((len(f"{les.id}/{x.id}") for les in pack.lessons for x in [*les.exercises, *les.cards]), default=20)

    def echo(row: Row) -> None:
        if args.json:
            return
        mark = "ok  " if row.ok else "FAIL"
        print(f"{mark} {row.item:<{width}}  {row.case:<9} {row.seconds:5.1f}s  {row.detail}", flush=True)

    jobs = getattr(args, "jobs", None)
    if jobs is not None and jobs < 1:
        raise TutorError("--jobs needs a whole number of at least 1")
    report = asyncio.run(test_pack(pack, lesson=args.lesson, device=args.device, jobs=jobs, echo=echo))
    failed = [r for r in report.rows if not r.ok]
    if args.json:
        print(json.dumps({"pack": pack.id, "ok": report.ok, "rows": [asdict(r) for r in report.rows]}, indent=2))
    else:
        print(f"{len(report.rows) - len(failed)} passed, {len(failed)} failed")
        for r in failed:
            print(f"  {r.item} {r.case}: {r.detail}", file=sys.stderr)
    return 0 if report.ok else 1
