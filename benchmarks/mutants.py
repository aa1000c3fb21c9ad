"""`pack test lessons` with and without mutants, side by side in one run (target: <= 3x).

Run: python benchmarks/mutants.py [--table]

Each run is a fresh `ptfund-tutor pack test lessons --json` in a new home, so its caches
(the kill cache, the last run's times) start cold; a third run repeats the mutants in the
second's home, where every proven kill is cached. ``--table`` also prints the per-exercise
counts as the Markdown table in lessons/README.md.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def pack_test(home: Path, mutants: str) -> tuple[float, float, dict]:
    env = {k: v for k, v in os.environ.items() if k != "PTFUND_TUTOR_CACHE"}
    env["PTFUND_TUTOR_HOME"] = str(home)
    cpu, started = children_cpu(), time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-m", "tutor", "pack", "test", str(REPO / "lessons"), "--json", "--mutants", mutants],
        capture_output=True,
        text=True,
        env=env,
        timeout=3600,
    )
    wall = time.perf_counter() - started
    if not r.stdout:
        raise SystemExit(r.stderr)
    return wall, children_cpu() - cpu, json.loads(r.stdout)


def counts(report: dict) -> dict[str, dict[str, int]]:
    out = {}
    for item, results in report["mutants"].items():
        c = {k: sum(r["outcome"] == k for r in results) for k in ("killed", "survived", "equivalent")}
        out[item] = {"mutants": len(results), **c}
    return out


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        off_wall, off_cpu, off = pack_test(Path(tmp) / "off", "off")
        on_wall, on_cpu, on = pack_test(Path(tmp) / "on", "summary")
        warm_wall, warm_cpu, _ = pack_test(Path(tmp) / "on", "summary")
    rows = len(off["rows"])
    per = counts(on)
    total = {k: sum(c[k] for c in per.values()) for k in ("mutants", "killed", "survived", "equivalent")}
    other_failures = [r for r in off["rows"] if not r["ok"]]
    print(f"cores: {len(os.sched_getaffinity(0))}, {rows} rows besides mutants, {len(other_failures)} of them failing")
    print(f"{'':44} {'wall':>8} {'CPU':>8} {'vs off':>8}")
    print(f"{'pack test lessons --mutants off':44} {off_wall:7.1f}s {off_cpu:7.1f}s {'1.00x':>8}")
    ratio = on_wall / off_wall
    print(
        f"{'pack test lessons (mutants, cold cache)':44} {on_wall:7.1f}s {on_cpu:7.1f}s {ratio:7.2f}x"
        f"   target <= 3x: {'meets' if ratio <= 3 else 'misses'}"
    )
    print(f"{'  again (kills cached)':44} {warm_wall:7.1f}s {warm_cpu:7.1f}s {warm_wall / off_wall:7.2f}x")
    print(
        f"mutants: {total['mutants']} ({total['killed']} killed, {total['survived']} survived, "
        f"{total['equivalent']} declared equivalent) in {len(per)} exercises"
    )
    if "--table" in sys.argv:
        print("\n| exercise | mutants | killed | survived | declared equivalent |\n|---|---:|---:|---:|---:|")
        for item, c in per.items():
            print(f"| {item} | {c['mutants']} | {c['killed']} | {c['survived']} | {c['equivalent']} |")
        print(
            f"| **all {len(per)}** | **{total['mutants']}** | **{total['killed']}** | "
            f"**{total['survived']}** | **{total['equivalent']}** |"
        )
        print("\nsurvivors (exercise, mutant id, operator, where):")
        for item, results in on["mutants"].items():
            for r in results:
                if r["outcome"] == "survived":
                    print(
                        f"- {item} `{r['id']}` ({r['operator']}) {r['where']}: `{r['diff'].splitlines()[-1][1:].strip()}`"
                    )


if __name__ == "__main__":
    main()
