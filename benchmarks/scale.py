"""`list` and the app's home screen with a 5,000-lesson pack, side by side with the built-in pack.

    python benchmarks/scale.py [--runs N] [--lessons N]

The pack is generated: the lessons `pack new` makes, repeated (benchmarks/packs.py's
``big_pack``). Each figure is the median of N runs, interleaved; "cold" is a fresh process
with an empty lesson cache (PTFUND_TUTOR_CACHE), "warm" the next one with the cache the
previous run left. `list` is timed from spawn to exit, with the process's peak RSS; the home
screen from spawn until its lessons are listed in a pseudo-terminal (startup.py), with the
UI process's RSS then.

Targets (issue 30): with 5,000 lessons, `list` and the home screen within 2 s each, and
within 150 MB.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from packs import big_pack  # noqa: E402
from startup import run_app, tutor_command  # noqa: E402

from tutor.packs.scaffold import new_pack  # noqa: E402

TARGET_S, TARGET_MB = 2.0, 150


def run_list(extra: list[str], data: str) -> tuple[float, float]:
    """Seconds from spawn to exit and peak RSS in MB of one `ptfund-tutor list`."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([*tutor_command(), "--data-dir", data, *extra, "list"], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.returncode == 0, proc.returncode
    return elapsed, usage.ru_maxrss / 1024


def measure(extra: list[str], data: str, cache_root: Path, runs: int) -> dict[str, tuple[float, float]]:
    """(seconds, MB) medians for list and home, cold and warm."""
    got: dict[str, list[tuple[float, float]]] = {k: [] for k in ("list cold", "list warm", "home cold", "home warm")}
    for i in range(runs):
        for what in ("list", "home"):
            os.environ["PTFUND_TUTOR_CACHE"] = str(cache_root / f"{what}-{i}")  # empty: cold
            for temperature in ("cold", "warm"):
                if what == "list":
                    got[f"list {temperature}"].append(run_list(extra, data))
                else:
                    r = run_app(data, wait_kernel=False, extra=tuple(extra))
                    got[f"home {temperature}"].append((r["listed"], r["rss_mb"]))
    return {k: (statistics.median(s for s, _ in v), statistics.median(mb for _, mb in v)) for k, v in got.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--lessons", type=int, default=5000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ptfund-scale-") as tmp:
        root = Path(tmp)
        big = big_pack(root / "big", args.lessons, new_pack(root / "scaffold"))
        data = str(root / "data")
        run_list([], data)  # creates the data dir and warms the page cache for both
        run_list(["--pack", str(big)], data)
        builtin = measure([], data, root / "cache", args.runs)
        many = measure(["--pack", str(big)], data, root / "cache-big", args.runs)
    print(f"{'':<12}{'built-in pack':>22}{f'+ {args.lessons:,} lessons':>24}   target")
    for key in builtin:
        (s0, mb0), (s1, mb1) = builtin[key], many[key]
        ok = s1 <= TARGET_S and mb1 <= TARGET_MB
        print(
            f"{key:<12}{s0:>9.2f} s {mb0:>7.0f} MB{s1:>11.2f} s {mb1:>7.0f} MB   "
            f"<= {TARGET_S:g} s, {TARGET_MB} MB: {'yes' if ok else 'NO'}"
        )
    print(f"median of {args.runs} runs; {os.cpu_count()} CPUs; Python {sys.version.split()[0]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
