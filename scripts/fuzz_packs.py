"""The long fuzz run: mutated lesson.yaml, pack.yaml, progress exports (imported, and handed
to `grade`) and Gradescope metadata, N of each.

    python scripts/fuzz_packs.py [--cases 10000] [--first-seed 0]

Each case is a seed (tests/fuzzing.py turns it into a mutated file) and must end in a clean
list of pack problems, or in `progress import`'s one sentence; anything else escaping is a
traceback, printed with its seed (reproduce with --first-seed SEED --cases 1). Every case
runs under an alarm (a hang counts as a failure) and the process under an address-space
cap (a blow-up becomes a MemoryError, counted too). Prints, per file type: cases,
tracebacks, hangs, the slowest case and the peak memory.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

import fuzzing  # noqa: E402

CASE_ALARM_S = 20
ADDRESS_SPACE = 4 << 30


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang(f"no result within {CASE_ALARM_S} s")


def run(kind: str, cases: int, first: int, work: Path) -> dict:
    base = fuzzing.make_pack_base(work)
    export = fuzzing.make_export(work)
    failures, hangs, slowest, slowest_seed = [], 0, 0.0, None
    for seed in range(first, first + cases):
        started = time.perf_counter()
        signal.alarm(CASE_ALARM_S)
        try:
            if kind == "grade-export":
                case = work / "grade"
                case.mkdir(exist_ok=True)
                try:
                    fuzzing.grade_export_cleanly(fuzzing.grade_export_case(export, seed), case)
                finally:
                    shutil.rmtree(case, ignore_errors=True)
            elif kind == "metadata":
                fuzzing.metadata_cleanly(fuzzing.metadata_case(seed), work)
            elif kind == "export":
                store = work / "store"
                store.mkdir(exist_ok=True)
                try:
                    fuzzing.import_cleanly(fuzzing.export_case(export, seed), store)
                finally:
                    shutil.rmtree(store, ignore_errors=True)
            else:
                fuzzing.check_pack_cleanly(fuzzing.pack_case(base, kind, seed, work))
        except Hang:
            hangs += 1
            print(f"{kind} seed {seed}: hang", flush=True)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            failures.append(seed)
            if len(failures) <= 5:
                print(f"{kind} seed {seed}: traceback", flush=True)
                traceback.print_exc()
        finally:
            signal.alarm(0)
        elapsed = time.perf_counter() - started
        if elapsed > slowest:
            slowest, slowest_seed = elapsed, seed
    return {"failures": failures, "hangs": hangs, "slowest": slowest, "slowest_seed": slowest_seed}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--kinds", default="lesson,manifest,export,grade-export,metadata")
    args = parser.parse_args()
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    signal.signal(signal.SIGALRM, _alarm)
    print("| file | cases | tracebacks | hangs | slowest case | peak RSS so far |")
    print("|---|---|---|---|---|---|")
    bad = 0
    for kind in args.kinds.split(","):
        with tempfile.TemporaryDirectory(prefix="ptfund-fuzz-") as tmp:
            started = time.perf_counter()
            r = run(kind, args.cases, args.first_seed, Path(tmp))
            total = time.perf_counter() - started
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        name = {
            "lesson": "lesson.yaml",
            "manifest": "pack.yaml",
            "export": "progress export",
            "grade-export": "export given to grade",
            "metadata": "submission_metadata.json",
        }[kind]
        print(
            f"| {name} | {args.cases} | {len(r['failures'])} | {r['hangs']} | "
            f"{r['slowest'] * 1000:.0f} ms (seed {r['slowest_seed']}) | {rss:.0f} MB |  ({total:.0f} s in all)",
            flush=True,
        )
        bad += len(r["failures"]) + r["hangs"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
