"""`ptfund-tutor check` from the shell with the warm server, side by side in one run with
``python -c "import torch"`` (the targets in docs/architecture.md).

    python benchmarks/warm_check.py [--runs N] [--json] [--before CHECKOUT]

Rows, each the median of N runs, interleaved (one of each per round, so load from other
work falls on every row alike):
- ``import torch``: the yardstick;
- check, cold: a data dir with no server yet: the check starts the server, which starts
  its fork server (that imports torch) and a spare, and answers;
- check, warm: the server of that data dir already runs, with a warm spare;
- check, in-process: ``PTFUND_TUTOR_NO_WARM=1``, the fallback (a kernel of its own);
- with ``--before CHECKOUT`` (e.g. ``git worktree add /tmp/before HEAD~3``): check cold and
  warm again with that checkout's tutor first on PYTHONPATH (its server, fork server and
  kernels too), in the same rounds: a change measured against the code before it.

The exercise is trivial (tensors/features-and-labels, its reference solution: a pass).
Targets: warm <= 0.3x import torch, cold <= 1.3x.

The tutor package's bytecode is compiled first (each side's), as ``pip install`` does: in an
environment with PYTHONDONTWRITEBYTECODE set (CI's, this project's machines) a source
checkout would otherwise compile every module of the tutor again in each process of a cold
check, which no installed copy does. torch and the other packages come compiled already.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tutor.grading.warm.client import stop_server  # noqa: E402
from tutor.packs.catalog import Catalog  # noqa: E402

TARGET = "tensors/features-and-labels"
TARGETS = {"check, warm": 0.3, "check, cold": 1.3}


def tutor_command() -> list[str]:
    script = Path(sys.executable).with_name("ptfund-tutor")
    return [str(script)] if script.exists() else [sys.executable, "-m", "tutor"]


def timed(cmd: list[str], env: dict[str, str], expect: int = 0) -> float:
    start = time.perf_counter()
    # From a folder of no checkout's: `python -m` (the warm server) puts the working directory
    # first on sys.path, where a checkout's tutor would shadow PYTHONPATH's (--before).
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tempfile.gettempdir())
    took = time.perf_counter() - start
    if run.returncode != expect:
        raise SystemExit(f"{' '.join(cmd)} exited {run.returncode}: {run.stdout}{run.stderr}")
    return took


def wait_gone(folder: Path, limit: float = 30.0) -> None:
    """Wait until no process works in ``folder`` (a stopped server's fork server and kernels
    end after it: their last work must not fall on the next row's clock)."""
    deadline = time.monotonic() + limit
    target = str(folder.resolve())
    while time.monotonic() < deadline:
        busy = False
        for proc in Path("/proc").glob("[0-9]*"):
            try:
                cwd = os.readlink(proc / "cwd")
            except OSError:
                continue
            if cwd == target or cwd.startswith(target + os.sep):
                busy = True
                break
        if not busy:
            return
        time.sleep(0.05)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--before", type=Path, help="a checkout of the code to compare with")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="ptfund-warm-"))
    code = work / "solution.py"
    code.write_text(Catalog.load().find_exercise(TARGET).exercise.solution, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("PTFUND_TUTOR_NO_WARM", "PTFUND_TUTOR_HOME")}
    env["PTFUND_TUTOR_CACHE"] = str(work / "cache")  # one lesson cache for every row, warmed below
    check = [*tutor_command(), "check", TARGET, "--file", str(code)]
    rows: dict[str, list[float]] = {"import torch": [], "check, cold": [], "check, warm": [], "check, in-process": []}
    sides = {"": env}
    if args.before is not None:
        # Caches of its own: two versions alternating over one lesson cache would rebuild it each time.
        sides[" (before)"] = dict(
            env, PYTHONPATH=str(args.before.resolve()), PTFUND_TUTOR_CACHE=str(work / "cache-before")
        )
        rows |= {"check, cold (before)": [], "check, warm (before)": []}

    def on(data: Path) -> list[str]:
        return [*check[:1], "--data-dir", str(data), *check[1:]]

    def warm_dir(side: str) -> Path:
        return work / f"warm{side.strip(' ()')}"  # side by side, never one inside another

    for root in [REPO] + ([args.before.resolve()] if args.before is not None else []):
        compileall.compile_dir(str(root / "tutor"), quiet=1)
    try:
        for side, side_env in sides.items():  # starts each side's warm server
            timed(on(warm_dir(side)), side_env)
        for n in range(args.runs):
            rows["import torch"].append(timed([sys.executable, "-c", "import torch"], env))
            for side, side_env in sides.items():
                cold_dir = work / f"cold-{n}{side.strip(' ()')}"
                rows[f"check, cold{side}"].append(timed(on(cold_dir), side_env))
                stop_server(cold_dir)
                wait_gone(cold_dir)
                rows[f"check, warm{side}"].append(timed(on(warm_dir(side)), side_env))
            own = dict(env, PTFUND_TUTOR_NO_WARM="1")
            rows["check, in-process"].append(timed(on(work / "own"), own))
    finally:
        for side in sides:
            stop_server(warm_dir(side))
    base = statistics.median(rows["import torch"])
    result = {
        name: {"median_s": statistics.median(t), "ratio": statistics.median(t) / base, "runs": t}
        for name, t in rows.items()
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{os.cpu_count()} CPUs, load average {load:.1f}, median of {args.runs} runs each, interleaved\n")
    print('| what | median | vs `python -c "import torch"` | target |')
    print("|---|---|---|---|")
    for name, r in result.items():
        target = TARGETS.get(name)
        verdict = "" if target is None else f"<= {target}x: {'meets' if r['ratio'] <= target else 'misses'}"
        print(f"| {name} | {r['median_s']:.2f} s | {r['ratio']:.2f}x | {verdict} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
