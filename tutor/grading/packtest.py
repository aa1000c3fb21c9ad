"""``pack test DIR``: prove a pack with real torch.

For every exercise: the reference solution passes, the starter fails, every wrong solution
fails and its feedback contains what the author said it must (``expect``). Every accepted solution passes too. For every
predict card: the stored key still matches what torch prints now. Every mutant of the
reference fails too, unless declared equivalent (mutants.py, mutantrun.py). Every runnable
Python block of an intuition states values torch still gives, and every card probe still
gives its card's key (intuition.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tutor.escape import for_terminal
from tutor.grading import intuition, packtimes
from tutor.grading.confirm import verify_confirmed
from tutor.grading.mutantrun import MODES, Batch, ExerciseMutants, MutantResult, display
from tutor.grading.mutantrun import first_problem as _first_problem
from tutor.grading.verdict import Verdict
from tutor.packs import models as m
from tutor.packs.codeblocks import Block, blocks
from tutor.packs.loader import Pack, check_pack
from tutor.packs.problems import PackError

if TYPE_CHECKING:
    from tutor.grading.review import PredictKernels
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
    mutants: dict[str, list[MutantResult]] = field(default_factory=dict)  # item -> its mutants
    blocks: int = 0  # intuition blocks run
    skipped: int = 0  # intuition blocks marked no-run
    probes: int = 0  # card probes run
    lessons_skipped: int = 0  # lessons whose `torch:` the installed torch is outside

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.rows)


log = logging.getLogger("tutor.grading")

Echo = Callable[[Row], None]  # told each row as it is decided (the command prints it)


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


def judge_must_fail(v: Verdict, expect: str | None, expect_not: str | None = None) -> tuple[bool, str]:
    if v.status == "authoring-error":
        return False, v.headline
    if v.passed:
        return False, "passes, but must fail"
    text = v.feedback()
    if expect and expect not in text:
        return False, f"fails, but the feedback lacks {expect!r}; it says: {_first_problem(v)}"
    if expect_not and expect_not in text:
        return False, f"fails, but the feedback says {expect_not!r}, a cause this code does not have"
    return True, "fails as it should" + (f" ({expect!r} shown)" if expect else "")


def reference_exercise(ex: m.Exercise) -> m.Exercise:
    """The exercise as its reference solution is proved: without the source checks that
    apply to the learner only (a loop reference beside one-line rules)."""
    kept = [c for c in ex.checks if not (isinstance(c, m.SourceCheck) and c.applies_to == "learner")]
    return ex if len(kept) == len(ex.checks) else ex.model_copy(update={"checks": kept})


def _judge_case(
    verdict: Verdict, case: str, expect: tuple[str | None, str | None], must_pass: bool
) -> tuple[bool, str]:
    if must_pass:
        return judge_solution(verdict, reference=case == "solution")
    return judge_must_fail(verdict, *expect)


async def _run_cases(verifier: Verifier, lesson: m.Lesson, ex: m.Exercise, report: Report, echo: Echo) -> None:
    item = f"{lesson.id}/{ex.id}"
    nothing: tuple[str | None, str | None] = (None, None)
    cases: list[tuple[str, str, tuple[str | None, str | None], bool]] = [("solution", ex.solution, nothing, True)]
    cases.append(("starter", ex.starter, nothing, False))
    cases += [(f"wrong {i + 1}", w.code, (w.expect, w.expect_not), False) for i, w in enumerate(ex.wrong_solutions)]
    cases += [(f"accepted {i + 1}", code, nothing, True) for i, code in enumerate(ex.accepted_solutions)]
    for case, code, expect, must_pass in cases:
        started = time.perf_counter()
        # The author reads hidden checks in full: an expect: may quote one's message.
        proved = m.every_check_shown(reference_exercise(ex) if case == "solution" else ex)
        verdict = await verify_confirmed(verifier, proved, code)  # a crash only counts if it happens again
        ok, detail = _judge_case(verdict, case, expect, must_pass)
        if not ok and verdict.status == "timeout":
            # A machine that stalls (other jobs, a disk that stops answering) can hold a
            # kernel past its limit: the pack is only wrong if it happens again.
            log.info("verifying %s %s again on fresh kernels: it ran out of time", item, case)
            verdict = await verify_confirmed(verifier, proved, code)
            ok, detail = _judge_case(verdict, case, expect, must_pass)
        row = Row(item, case, ok, detail, time.perf_counter() - started)
        report.rows.append(row)
        echo(row)


async def _prove_predict_card(kernels: PredictKernels, lesson: m.Lesson, card: m.PredictCard) -> Row:
    """The card's code run as a quiz runs it (tutor.grading.review: a fresh kernel of its own)."""
    from tutor.grading.review import prove_key

    started = time.perf_counter()
    ok, detail = prove_key(card, await kernels.predict(card.code))
    return Row(f"{lesson.id}/{card.id}", "predict", ok, detail, time.perf_counter() - started)


async def _prove_text(
    predict: PredictKernels, pack: Pack, les: m.Lesson, item: Block | m.Card, before: list[Block]
) -> Row:
    """A predict card, an intuition block or a card's probe, each in a fresh kernel."""
    if isinstance(item, m.PredictCard):
        return await _prove_predict_card(predict, les, item)
    started = time.perf_counter()
    assert predict.pool is not None  # pack test always runs from a pool
    if isinstance(item, Block):
        ok, detail = await intuition.prove_block(predict.pool, les, item, before, pack.origin(les.id, "intuition"))
        return Row(f"{les.id}/intuition", f"block {item.number}", ok, detail, time.perf_counter() - started)
    at = pack.origin(les.id, "cards", les.cards.index(item), "prompt")
    ok, detail = await intuition.prove_probe(predict.pool, les, item)
    detail = f"{display(at.file)}:{at.line}: {detail}"
    return Row(f"{les.id}/{item.id}", "probe", ok, detail, time.perf_counter() - started)


def _mutant_rows(item: str, found: ExerciseMutants, mode: str, seconds: float) -> list[Row]:
    """The exercise's summary row, then one row per survivor (per mutant, with ``all``)."""
    rows = [Row(item, "mutants", found.ok, found.summary(), seconds)]
    for r in found.results:
        diff = "\n".join(f"        {line}" for line in r.diff.splitlines())
        if r.outcome == "survived":
            rows.append(
                Row(
                    item,
                    "mutant",
                    False,
                    f"{r.where}: weak check: mutant {r.id} ({r.operator}) passes\n{diff}",
                    r.seconds,
                )
            )
        elif mode == "all":
            rows.append(
                Row(
                    item,
                    "mutant",
                    True,
                    f"{r.where}: {r.id} ({r.operator}) {r.outcome}: {r.detail.splitlines()[0] if r.detail else ''}",
                    r.seconds,
                )
            )
    return rows


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
    mutants: str = "summary",
) -> Report:
    """Prove the pack with ``jobs`` workers (default: one per core), sharing one pool.

    Every case of an exercise is verified as ``check`` verifies a learner's code: a fresh
    learner's kernel and a judge's kernel (judging.py), so what passes here passes there;
    the judge, which never runs the cases' code, serves all of one exercise's cases. A
    predict card's code runs alone in its kernel, as in a quiz (tutor.grading.review).
    Rows come out in the pack's order whatever order the workers finish in; ``echo`` sees
    each as it is done. Items start slowest first by their times in the pack's last run
    (``times``: read and record them; packtimes.py).

    ``mutants`` (off, summary, all): each exercise's mutants are one more item, run in a
    fresh kernel of their own beside the rest (mutantrun.py); proven kills are cached.
    """
    from tutor.engine.pool import KernelPool
    from tutor.grading.mutantcache import MutantCache
    from tutor.grading.mutantrun import batches, combine, run_batch
    from tutor.grading.review import PredictKernels
    from tutor.grading.verify import KERNELS_PER_VERIFICATION, Verifier

    if mutants not in MODES:
        raise ValueError(f"mutants must be one of {MODES}")

    from tutor.packs.torchneed import unmet

    lessons = []
    skipped_rows: list[Row] = []
    for les in pack.lessons:
        if lesson is not None and les.id != lesson:
            continue
        why = unmet(les.torch)
        if why is None:
            lessons.append(les)
        else:
            skipped_rows.append(Row(les.id, "skipped", True, why))
            echo(skipped_rows[-1])
    items: list[tuple[m.Lesson, m.Exercise | m.Card | Block]] = []
    texts: dict[str, list[Block]] = {}  # lesson id -> its runnable intuition blocks
    skipped = 0
    # item index -> (the exercise's index in its lesson, a batch of its mutants)
    mutant_of: dict[int, tuple[int, Batch]] = {}
    for les in lessons:
        for k, ex in enumerate(les.exercises):
            items.append((les, ex))
            if mutants != "off":
                for batch in batches(ex):
                    mutant_of[len(items)] = (k, batch)
                    items.append((les, ex))
        items += [(les, card) for card in les.cards if isinstance(card, m.PredictCard)]
        found_blocks = blocks(les.intuition)
        texts[les.id] = [b for b in found_blocks if b.runs]
        skipped += len(found_blocks) - len(texts[les.id])
        items += [(les, b) for b in texts[les.id]]
        items += [(les, card) for card in les.cards if isinstance(card, intuition.PROBED) and card.probe]
    counts = {
        "blocks": sum(isinstance(item, Block) for _, item in items),
        "probes": sum(isinstance(item, intuition.PROBED) for _, item in items),
        "skipped": skipped,
        "lessons_skipped": len(skipped_rows),
    }
    parts = [Report() for _ in items]
    if not items:
        return Report(skipped_rows, {}, **counts)
    jobs = max(1, min(jobs or default_jobs(), len(items)))
    # Every case is a verification as `check` makes it: a fresh learner's kernel, and the
    # exercise's judge (kept from one case to the next); a mutant batch and a predict card
    # take one kernel each.
    exercises = [ex for i, (_, ex) in enumerate(items) if isinstance(ex, m.Exercise) and i not in mutant_of]
    cases = sum(2 + len(ex.wrong_solutions) + len(ex.accepted_solutions) for ex in exercises)
    others = sum(1 for i, (_, x) in enumerate(items) if isinstance(x, m.PredictCard))
    others += sum(1 for _, batch in mutant_of.values() if batch.mutants or batch.literal)
    pool = KernelPool(device=device, size=jobs * KERNELS_PER_VERIFICATION, demand=cases + len(exercises) + others)
    verifier = Verifier(pool, device=device, reuse_judges=True)
    predict = PredictKernels(pool)
    keys: list[str] = []
    # per exercise: its batches' item indexes, and the results of those done
    pending: dict[str, list[int]] = {}
    for i, (item_lesson, item_ex) in enumerate(items):
        key = f"{item_lesson.id}/{item_ex.id}"
        if i in mutant_of:
            pending.setdefault(key, []).append(i)
            key += f" (mutants {len(pending[key])})"
        if isinstance(item_ex, Block):
            key += f" {item_ex.number}"
        keys.append(key)
    cache = MutantCache()
    found: dict[str, list[MutantResult]] = {}
    done: dict[str, dict[int, ExerciseMutants]] = {}
    last_times = packtimes.load(pack.root) if times else {}
    queue = [(i, items[i]) for i in packtimes.slowest_first(keys, last_times)]
    queue.reverse()
    took: dict[str, float] = {}

    async def worker() -> None:
        while queue:
            index, (les, item) = queue.pop()
            if index in mutant_of and isinstance(item, m.Exercise):
                started = time.perf_counter()
                k, batch = mutant_of[index]
                origin = pack.origin(les.id, "exercises", k, "solution")
                name = f"{les.id}/{item.id}"
                # Mutants are of the reference, so they are judged as the reference is.
                proved = m.every_check_shown(reference_exercise(item))
                done.setdefault(name, {})[index] = await run_batch(pool, proved, origin, cache, batch)
                took[keys[index]] = time.perf_counter() - started
                if len(done[name]) == len(pending[name]):  # the exercise's last batch: report them all
                    result = combine(item, [done[name][i] for i in pending[name]])
                    found[name] = result.results
                    seconds = sum(r.seconds for r in result.results)
                    for row in _mutant_rows(name, result, mutants, seconds):
                        parts[pending[name][0]].rows.append(row)
                        echo(row)
                continue
            started = time.perf_counter()
            if not isinstance(item, m.Exercise):
                before = [b for b in texts[les.id] if isinstance(item, Block) and b.number < item.number]
                row = await _prove_text(predict, pack, les, item, before)
                parts[index].rows.append(row)
                echo(row)
            else:
                await _run_cases(verifier, les, item, parts[index], echo)
                verifier.drop_judges(item)
            took[keys[index]] = time.perf_counter() - started

    try:
        await verifier.fan_out(jobs, worker)
    finally:
        cache.save()  # what was proven stays proven, even when the run is cut short
    if times:
        packtimes.save(pack.root, took if lesson is None else {**last_times, **took})
    rows = skipped_rows + [row for part in parts for row in part.rows]
    return Report(rows, {k: found[k] for k in pending if k in found}, **counts)


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
        mark = "skip" if row.case == "skipped" else "ok  " if row.ok else "FAIL"
        detail = for_terminal(row.detail)  # a mutant's diff keeps its lines
        print(f"{mark} {row.item:<{width}}  {row.case:<9} {row.seconds:5.1f}s  {detail}", flush=True)

    jobs = getattr(args, "jobs", None)
    if jobs is not None and jobs < 1:
        raise TutorError("--jobs needs a whole number of at least 1")
    mode = getattr(args, "mutants", "summary")
    report = asyncio.run(test_pack(pack, lesson=args.lesson, device=args.device, jobs=jobs, echo=echo, mutants=mode))
    failed = [r for r in report.rows if not r.ok]
    if args.json:
        mutants = {item: [asdict(r) for r in results] for item, results in report.mutants.items()}
        print(
            json.dumps(
                {
                    "pack": pack.id,
                    "ok": report.ok,
                    "rows": [asdict(r) for r in report.rows],
                    "mutants": mutants,
                    "intuition_blocks": report.blocks,
                    "intuition_blocks_skipped": report.skipped,
                    "card_probes": report.probes,
                    "lessons_skipped": report.lessons_skipped,
                },
                indent=2,
            )
        )
    else:
        skipped = report.lessons_skipped
        passed = len(report.rows) - len(failed) - skipped
        print(
            f"{passed} passed, {len(failed)} failed "
            f"({report.blocks} intuition blocks run, {report.skipped} marked no-run; {report.probes} card probes"
            + (f"; {skipped} lesson{'s' if skipped != 1 else ''} skipped for this torch" if skipped else "")
            + ")"
        )
        for r in failed:
            print(f"  {r.item} {r.case}: {for_terminal(r.detail)}", file=sys.stderr)
    return 0 if report.ok else 1
