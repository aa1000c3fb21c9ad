"""The judged two-kernel verification vs the single-kernel one, side by side in one run.

    python benchmarks/judge.py [--repeat 5] [--learners 4] [--jobs 2] [--no-write]

(a) One verification from warm kernels, per exercise: the judged path (a learner's kernel
    and a judge's kernel, tutor/grading/judging.py; over the pipe, and with every request
    relayed as a prompt, as for a gateway's kernels) vs the single-kernel path (today's
    `--kernel` path: one cell with setup, reference, learner code and checks, in one
    fresh kernel). Kernels are started and warmed before the clock starts, as the app's
    spares are, and the clock starts once no spare of the pool is still booting
    (``KernelPool.settled``); the sides take turns first so background load hits them alike.
(b) `check` from the shell, cold: two kernels started side by side and warmed, then the
    judged verification (`verify_in_fresh_kernel`), vs one kernel started, warmed and
    verified in.
(c) Grading a small class (learners x the exercises of (a), the reference, the starter or
    the first wrong solution in rotation) with --jobs workers over one pool, as `grade`
    does: a learner's kernel per file and kept judges vs one kernel per file. The fork
    server is warmed for both sides first, then --rounds rounds alternate the order.
Medians; the ratios are judged / single. Target (issue 21): (a) at most 1.2x; (c) at most 1x.
Writes the table to BENCHMARKS.md under "## Judged verification".
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import re
import statistics
import sys
import time
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tutor.engine import KernelPool, KernelSession  # noqa: E402
from tutor.engine.pool import warm_up  # noqa: E402
from tutor.grading.judging import verify_judged  # noqa: E402
from tutor.grading.verify import KERNELS_PER_VERIFICATION, Verifier, verify_in_fresh_kernel  # noqa: E402
from tutor.packs.catalog import Catalog  # noqa: E402

EXERCISES = (
    "views-strides/transpose-view",  # tensor checks only
    "tensors/follow-the-input",  # a function check: 24 calls into the learner's kernel
    "tensors/leaf-parameter",  # autograd facts
    "modules/mlp",  # a module check and an authored python check (forwards across)
    "checkpoints/best-state",  # a training setup, setup helpers called by checks
    "numpy-bridge/back-to-numpy",  # arrays
)
TARGET_ONE = 1.2
TARGET_CLASS = 1.0


def kernel_cpu_ms(session: KernelSession) -> float:
    """CPU time a local kernel has used, every thread, in ms (/proc schedstat: nanoseconds,
    where /proc/PID/stat counts 10 ms ticks); 0 where it cannot be read."""
    pid = session.report.get("pid")
    total = 0
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0.0
    for thread in threads:
        try:
            with open(f"/proc/{pid}/task/{thread}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total / 1e6


def host_cpu_ms() -> float:
    return time.process_time() * 1000


async def one_single(pool: KernelPool, exercise, code: str, cpu: dict) -> tuple[float, bool]:
    # A person's pool starts its spares once the last verification's kernels are back: they
    # are warm (rehearsed) by the time a person checks again, and are here too.
    await pool.settled()
    kernel = await pool.take()
    await pool.settled()  # the refill started by take() is not this verification's load
    try:
        host, mine = host_cpu_ms(), kernel_cpu_ms(kernel)
        started = time.perf_counter()
        verdict = await Verifier(attached=kernel).verify(exercise, code)
        elapsed = time.perf_counter() - started
        cpu.setdefault("host", []).append(host_cpu_ms() - host)
        cpu.setdefault("kernel", []).append(kernel_cpu_ms(kernel) - mine)
        return elapsed, verdict.passed
    finally:
        pool.give_back(kernel)


async def one_judged(pool: KernelPool, exercise, code: str, cpu: dict, pipe: bool = True) -> tuple[float, bool]:
    await pool.settled()  # the spares started as the last verification's kernels came back
    learner, judge = await pool.take(), await pool.take()
    await pool.settled()
    try:
        host, learner_cpu, judge_cpu = host_cpu_ms(), kernel_cpu_ms(learner), kernel_cpu_ms(judge)
        started = time.perf_counter()
        verdict = await verify_judged(exercise, code, learner, judge, limit=exercise.time_limit, pipe=pipe)
        elapsed = time.perf_counter() - started
        cpu.setdefault("host", []).append(host_cpu_ms() - host)
        cpu.setdefault("learner", []).append(kernel_cpu_ms(learner) - learner_cpu)
        cpu.setdefault("judge", []).append(kernel_cpu_ms(judge) - judge_cpu)
        return elapsed, verdict.passed
    finally:
        pool.give_back(learner)
        pool.give_back(judge)


def cpu_text(cpu: dict) -> str:
    """Median CPU ms per verification of each role, e.g. "host 5 + kernel 30"."""
    return " + ".join(f"{role} {statistics.median(ms):.0f}" for role, ms in cpu.items())


async def one_relayed(pool: KernelPool, exercise, code: str, cpu: dict) -> tuple[float, bool]:
    """The judged path with every request relayed as a prompt (a gateway's kernels; main before the pipe)."""
    return await one_judged(pool, exercise, code, cpu, pipe=False)


async def bench_warm(refs, repeat: int) -> list[tuple[str, float, float, bool, str, str, float, str]]:
    """Per exercise: key, single and judged medians (s), all passed, each side's CPU per
    role, then the relayed path's median and CPU."""
    pool = KernelPool(size=KERNELS_PER_VERIFICATION)
    await pool.start()
    rows = []
    sides = (one_single, one_judged, one_relayed)
    try:
        for ref in refs:
            ex = ref.exercise
            times: dict = {fn: [] for fn in sides}
            cpu: dict = {fn: {} for fn in sides}
            ok = True
            for i in range(repeat):
                for fn in sides[i % 3 :] + sides[: i % 3]:  # each side first in turn
                    elapsed, passed = await fn(pool, ex, ex.solution, cpu[fn])
                    ok = ok and passed
                    times[fn].append(elapsed)
            single, judged, relayed = (statistics.median(times[fn]) for fn in sides)
            cpus = [cpu_text(cpu[fn]) for fn in sides]
            rows.append((ref.key, single, judged, ok, cpus[0], cpus[1], relayed, cpus[2]))
    finally:
        await pool.shutdown()
    return rows


async def cold_single(exercise, code: str) -> float:
    started = time.perf_counter()
    session = KernelSession()
    try:
        await session.start()
        await warm_up(session, timeout=120)
        await Verifier(attached=session).verify(exercise, code)
    finally:
        await session.shutdown()
    return time.perf_counter() - started


async def cold_judged(exercise, code: str) -> float:
    started = time.perf_counter()
    await verify_in_fresh_kernel(exercise, code)
    return time.perf_counter() - started


async def bench_cold(ref, repeat: int) -> tuple[float, float]:
    single, judged = [], []
    for i in range(repeat):
        if i % 2 == 0:
            single.append(await cold_single(ref.exercise, ref.exercise.solution))
            judged.append(await cold_judged(ref.exercise, ref.exercise.solution))
        else:
            judged.append(await cold_judged(ref.exercise, ref.exercise.solution))
            single.append(await cold_single(ref.exercise, ref.exercise.solution))
    return statistics.median(single), statistics.median(judged)


async def grade_class(tasks, jobs: int, judged: bool) -> tuple[float, list[str], dict]:
    """Seconds, each file's status, and CPU ms per file: the host's, the kernels' (their
    whole lives: boot, warm-up, verification; read as each is handed back)."""
    per = KERNELS_PER_VERIFICATION if judged else 1
    # As `grade` asks (gradebook.py): a learner's kernel per file, plus a judge per worker.
    pool = KernelPool(size=jobs * per, demand=len(tasks) + (jobs if judged else 0), recover=False)
    kernels = [0.0]
    give_back = pool.give_back

    def counted(session: KernelSession) -> None:
        kernels[0] += kernel_cpu_ms(session)
        give_back(session)

    pool.give_back = counted  # type: ignore[method-assign]
    verifier = Verifier(pool, reuse_judges=True)
    queue = list(enumerate(tasks))
    if judged:
        # As `grade` orders a block of learners (gradebook.LEARNER_BLOCK): exercise by
        # exercise, so the judge kept from one file serves the next of its exercise.
        queue.sort(key=lambda item: id(item[1][0]))
    queue.reverse()
    statuses = [""] * len(tasks)

    async def worker() -> None:
        while queue:
            index, (exercise, code) = queue.pop()
            if judged:
                verdict = await verifier.verify(exercise, code)
            else:
                kernel = await pool.take()
                try:
                    verdict = await Verifier(attached=kernel).verify(exercise, code)
                finally:
                    pool.give_back(kernel)
            statuses[index] = verdict.status

    judges = [0.0]

    def judge_ended(session: KernelSession) -> None:
        # a kept judge is shut down by the verifier, never handed back: counted here
        judges[0] += kernel_cpu_ms(session)

    started, host = time.perf_counter(), host_cpu_ms()
    await verifier.fan_out(jobs, worker, on_judge_end=judge_ended)
    cpu = {"host": (host_cpu_ms() - host) / len(tasks), "kernels": kernels[0] / len(tasks)}
    if judged:
        cpu["kept judges"] = judges[0] / len(tasks)
    return time.perf_counter() - started, statuses, cpu


def bench_class(tasks, jobs: int, rounds: int) -> tuple[float, float, list[str], list[str], dict]:
    """Both sides of (c), fairly: the fork server and its pages warmed first (by a small
    class of each side: whichever ran first would pay its start), then ``rounds`` rounds
    with the order alternating; medians. The last dict: each side's CPU text (ms per file)."""
    asyncio.run(grade_class(tasks[: len(EXERCISES)], jobs, judged=False))
    asyncio.run(grade_class(tasks[: len(EXERCISES)], jobs, judged=True))
    times: dict[bool, list[float]] = {False: [], True: []}
    statuses: dict[bool, list[str]] = {}
    cpu: dict[bool, dict] = {False: {}, True: {}}
    for number in range(rounds):
        for judged in (False, True) if number % 2 == 0 else (True, False):
            elapsed, statuses[judged], used = asyncio.run(grade_class(tasks, jobs, judged))
            times[judged].append(elapsed)
            for role, ms in used.items():
                cpu[judged].setdefault(role, []).append(ms)
    texts = {judged: cpu_text(cpu[judged]) for judged in (False, True)}
    return statistics.median(times[False]), statistics.median(times[True]), statuses[False], statuses[True], texts


def class_tasks(refs, learners: int):
    tasks = []
    for i in range(learners):
        for j, ref in enumerate(refs):
            ex = ref.exercise
            wrong = ex.wrong_solutions[0].code if ex.wrong_solutions else ex.starter
            tasks.append((ex, (ex.solution, ex.starter, wrong)[(i + j) % 3]))
    return tasks


def write(section: str) -> None:
    """Put ``section`` first under "## Judged verification"; the runs recorded there before
    stay below it (the first as "The run before this one"), their notes with them."""
    path = REPO / "BENCHMARKS.md"
    text = path.read_text()
    pattern = re.compile(r"^## Judged verification\n.*?(?=^## |\Z)", re.S | re.M)
    found = pattern.search(text)
    if found is None:
        path.write_text(text.rstrip("\n") + "\n\n" + section)
        return
    found_text = found.group(0)
    at = found_text.find("Run: ")
    before = found_text[at:] if at >= 0 else ""
    # Dated notes a person wrote between the description and the first run stay there.
    first_note = found_text.find("\n- ")
    notes = found_text[first_note + 1 : at] if 0 <= first_note < at else ""
    split = section.find("Run: ")
    if notes and split >= 0:
        section = section[:split] + notes + section[split:]
    kept = f"{section}\n### The run before this one\n\n{before}" if before else section
    path.write_text(text[: found.start()] + kept.rstrip("\n") + "\n\n" + text[found.end() :])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cold-repeat", type=int, default=3)
    parser.add_argument("--learners", type=int, default=4)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of (c), the order alternating")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--class-only", action="store_true", help="only (c); print it, write nothing")
    parser.add_argument("--warm-only", action="store_true", help="only (a); print it, write nothing")
    parser.add_argument("--exercise", action="append", help="only these exercises (repeatable)")
    args = parser.parse_args()
    if args.warm_only:
        refs = [Catalog.load().find_exercise(key) for key in args.exercise or EXERCISES]
        rows = asyncio.run(bench_warm(refs, args.repeat))
        for key, single, judged, ok, cpu_single, cpu_judged, relayed, cpu_relayed in rows:
            print(
                f"{key}: single {single * 1000:.0f} ms, judged {judged * 1000:.0f} ms, {judged / single:.2f}x, {ok}; "
                f"relayed {relayed * 1000:.0f} ms, {relayed / single:.2f}x; "
                f"CPU ms: single {cpu_single}, judged {cpu_judged}, relayed {cpu_relayed}"
            )
        ratio = statistics.median(r[2] for r in rows) / statistics.median(r[1] for r in rows)
        print(f"median ratio {ratio:.2f}x")
        return
    if args.class_only:
        refs = [Catalog.load().find_exercise(key) for key in EXERCISES]
        tasks = class_tasks(refs, args.learners)
        load = os.getloadavg()
        single, judged, statuses_single, statuses_judged, cpu = bench_class(tasks, args.jobs, args.rounds)
        same = sum(a == b for a, b in zip(statuses_single, statuses_judged, strict=True))
        print(
            f"class of {len(tasks)} files, median of {args.rounds} rounds: single {single:.2f} s, "
            f"judged {judged:.2f} s, {judged / single:.2f}x; verdicts identical on {same} of {len(tasks)}; "
            f"CPU ms per file: single {cpu[False]}, judged {cpu[True]}; "
            f"load {load[0]:.1f} -> {os.getloadavg()[0]:.1f}"
        )
        return

    catalog = Catalog.load()
    refs = [catalog.find_exercise(key) for key in EXERCISES]
    load = os.getloadavg()
    rows = asyncio.run(bench_warm(refs, args.repeat))
    cold = asyncio.run(bench_cold(refs[0], args.cold_repeat))
    tasks = class_tasks(refs, args.learners)
    grade_single, grade_judged, statuses_single, statuses_judged, class_cpu = bench_class(tasks, args.jobs, args.rounds)
    load_end = os.getloadavg()

    single_all = statistics.median(r[1] for r in rows)
    judged_all = statistics.median(r[2] for r in rows)
    ratio = judged_all / single_all

    def verdict(value: float, target: float) -> str:
        return f"<= {target}x: {'meets' if value <= target else 'MISSES'}"

    relayed_all = statistics.median(r[6] for r in rows)
    lines = [
        "| what | single kernel | judged (two kernels, the pipe) | ratio | target | judged, relayed prompts "
        "| CPU ms, single | CPU ms, judged | CPU ms, relayed |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for key, single, judged, ok, cpu_single, cpu_judged, relayed, cpu_relayed in rows:
        note = "" if ok else " (reference did not pass)"
        lines.append(
            f"| {key}{note} | {single * 1000:.0f} ms | {judged * 1000:.0f} ms | {judged / single:.2f}x | | "
            f"{relayed * 1000:.0f} ms ({relayed / single:.2f}x) | {cpu_single} | {cpu_judged} | {cpu_relayed} |"
        )
    lines.append(
        f"| **median over the {len(rows)} exercises**, warm kernels | {single_all * 1000:.0f} ms | "
        f"{judged_all * 1000:.0f} ms | {ratio:.2f}x | {verdict(ratio, TARGET_ONE)} | "
        f"{relayed_all * 1000:.0f} ms ({relayed_all / single_all:.2f}x) | | | |"
    )
    lines.append(
        f"| `check` cold ({refs[0].key}): start, warm and verify | {cold[0]:.2f} s | {cold[1]:.2f} s | "
        f"{cold[1] / cold[0]:.2f}x | | | | | |"
    )
    class_ratio = grade_judged / grade_single
    lines.append(
        f"| a class of {args.learners} x {len(refs)} files, --jobs {args.jobs} | {grade_single:.1f} s | "
        f"{grade_judged:.1f} s | {class_ratio:.2f}x | {verdict(class_ratio, TARGET_CLASS)} | | "
        f"{class_cpu[False]} per file | {class_cpu[True]} per file | |"
    )
    same = sum(a == b for a, b in zip(statuses_single, statuses_judged, strict=True))
    table = "\n".join(lines)
    print(table)
    print(f"class verdicts identical on {same} of {len(tasks)} files")

    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    section = (
        "## Judged verification\n\n"
        "`python benchmarks/judge.py` (one run, the paths side by side, alternating): the judged\n"
        "verification (a learner's kernel runs the code, a judge's kernel decides; docs/trust.md) vs\n"
        "the single-kernel one it replaced (still the `--kernel` path); for one verification also the\n"
        "judged path with every request relayed as a prompt (a gateway's kernels; every local one\n"
        "before the pipe). Medians of "
        f"{args.repeat} per exercise\n(reference solutions), warm kernels from a pool; the cold row is "
        f"a median of {args.cold_repeat}. CPU ms: each role's CPU time per verification (the host's,\n"
        "the kernels' from /proc schedstat), medians; for the class, per file, the kernels' whole lives.\n\n"
        f"Run: {stamp}, {platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, torch {version('torch')}; load average "
        f"{load[0]:.1f} at the start, {load_end[0]:.1f} at the end.\n\n"
        f"{table}\n\n"
        f"- Class verdicts identical on {same} of {len(tasks)} files.\n"
    )
    if not args.no_write:
        write(section)


if __name__ == "__main__":
    main()
