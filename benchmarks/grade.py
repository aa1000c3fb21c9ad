"""`grade` on a generated class vs a shell loop of `ptfund-tutor check` over the same files.

40 learners x 10 exercises of the built-in pack (one exercise from each of the first ten
lessons); each file is the reference solution, the starter or the first wrong solution,
in rotation. `grade --no-cache` verifies them all; the shell loop runs one
`ptfund-tutor check --json` per file, over the first --loop-learners learners only when
the whole loop would take too long (then extrapolated, and said so). Verdicts must match
file by file.

Run: python benchmarks/grade.py [--learners 40] [--jobs N] [--loop-learners 4]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tutor.grading.gradebook import GRADES  # noqa: E402
from tutor.packs.catalog import Catalog  # noqa: E402

CLI = [sys.executable, "-m", "tutor"]


def exercises(count: int = 10):
    chosen, seen = [], set()
    for ref in Catalog.load().exercises():
        if ref.lesson.id not in seen and ref.exercise.wrong_solutions:
            seen.add(ref.lesson.id)
            chosen.append(ref)
    return chosen[:count]


def generate(root: Path, learners: int, refs) -> list[tuple[str, str, Path]]:
    files = []
    for i in range(learners):
        name = f"learner{i:02d}"
        for j, ref in enumerate(refs):
            kind = (i + j) % 3
            code = (ref.exercise.solution, ref.exercise.starter, ref.exercise.wrong_solutions[0].code)[kind]
            path = root / name / ref.lesson.id / f"{ref.exercise.id}.py"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(code)
            files.append((name, ref.key, path))
    return files


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--learners", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--loop-learners", type=int, default=4, help="learners the shell loop covers")
    args = parser.parse_args()

    refs = exercises()
    tmp = Path(tempfile.mkdtemp(prefix="ptfund-grade-bench-"))
    files = generate(tmp / "subs", args.learners, refs)
    env = {**os.environ, "PTFUND_TUTOR_HOME": str(tmp / "home"), "PYTHONPATH": str(REPO)}
    env.pop("PTFUND_TUTOR_CACHE", None)
    load = os.getloadavg()[0]

    cmd = [*CLI, "grade", str(tmp / "subs"), "--no-cache", "--json"]
    if args.jobs:
        cmd += ["--jobs", str(args.jobs)]
    started = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    grade_s = time.perf_counter() - started
    if r.returncode != 0:
        raise SystemExit(f"grade failed: {r.stderr}")
    book = {lr["learner"]: lr["verdicts"] for lr in json.loads(r.stdout)["learners"]}
    graded = sum(1 for v in book.values() for cell in v.values() if cell["grade"] != "missing")

    loop_files = [f for f in files if int(f[0][len("learner") :]) < args.loop_learners]
    mismatches = []
    started = time.perf_counter()
    for learner, key, path in loop_files:
        c = subprocess.run([*CLI, "check", key, "--file", str(path), "--json"], capture_output=True, text=True, env=env)
        try:
            status = json.loads(c.stdout)["status"]
        except (ValueError, KeyError):
            raise SystemExit(f"check failed on {path}: {c.stderr}") from None
        if GRADES[status] != book[learner][key]["grade"]:
            mismatches.append((learner, key, status, book[learner][key]["grade"]))
    loop_s = time.perf_counter() - started

    grade_rate = graded / grade_s
    loop_rate = len(loop_files) / loop_s
    counts: dict[str, int] = {}
    for v in book.values():
        for cell in v.values():
            if cell["grade"] != "missing":  # the chosen lessons' other exercises
                counts[cell["grade"]] = counts.get(cell["grade"], 0) + 1
    extrapolated = len(loop_files) < len(files)
    print(f"class: {args.learners} learners x {len(refs)} exercises = {len(files)} files; verdicts {counts}")
    print(f"load average at start: {load:.1f}; cpus: {os.cpu_count()}")
    print("| what | files | seconds | verdicts/s |")
    print("|---|---|---|---|")
    jobs = f"--jobs {args.jobs}" if args.jobs else "default --jobs"
    print(f"| `grade --no-cache` ({jobs}) | {graded} | {grade_s:.1f} | {grade_rate:.2f} |")
    loop_note = f" (first {args.loop_learners} learners)" if extrapolated else ""
    print(f"| shell loop of `check --json`{loop_note} | {len(loop_files)} | {loop_s:.1f} | {loop_rate:.2f} |")
    if extrapolated:
        print(f"| shell loop, extrapolated to all {len(files)} files | {len(files)} | {len(files) / loop_rate:.0f} | |")
    print(f"speed-up: {grade_rate / loop_rate:.1f}x (target >= 5x)")
    print(f"verdicts identical on the {len(loop_files)} files both ran: {not mismatches} {mismatches[:5]}")


if __name__ == "__main__":
    main()
