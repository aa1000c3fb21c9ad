"""Check verdicts (the targets in docs/architecture.md), side by side with their baselines in one run.

1. Verdict in the TUI, fresh-kernel verification from a warm spare: median over the
   built-in exercises' reference solutions (target <= 250 ms).
2. `ptfund-tutor check` cold from the CLI vs `python -c "import torch"` (target <= 1.5x).

Run: python benchmarks/verify.py [--limit N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tutor.packs.catalog import ExerciseRef  # noqa: E402
from tutor.packs.loader import check_pack  # noqa: E402
from tutor.paths import builtin_pack_dir  # noqa: E402


def builtin_exercises() -> list[ExerciseRef]:
    pack, _ = check_pack(builtin_pack_dir())  # lessons with problems are skipped, not fatal
    return [ExerciseRef(pack, les, ex) for les in pack.lessons for ex in les.exercises]


def median_run(cmd: list[str], repeat: int, env=None) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        r = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env)
        times.append(time.perf_counter() - start)
        if r.returncode != 0:
            raise SystemExit(f"{' '.join(cmd[:4])}... failed: {r.stderr.strip() or r.stdout.strip()}")
    return statistics.median(times)


async def warm_verdicts(limit: int | None) -> list[tuple[str, float, bool]]:
    from tutor.engine import KernelPool
    from tutor.grading.verify import Verifier

    refs = builtin_exercises()[:limit]
    pool = KernelPool()
    await pool.start()
    verifier = Verifier(pool)
    out = []
    try:
        for ref in refs:
            await pool.ready()  # the learner reads and types while the spare warms
            start = time.perf_counter()
            verdict = await verifier.verify(ref.exercise, ref.exercise.solution)
            out.append((ref.key, time.perf_counter() - start, verdict.passed))
    finally:
        await pool.shutdown()
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=None, help="only the first N exercises")
    args = parser.parse_args()

    rows = asyncio.run(warm_verdicts(args.limit))
    times = [t for _, t, _ in rows]
    slowest = sorted(rows, key=lambda r: -r[1])[:3]
    warm = statistics.median(times)

    ref = builtin_exercises()[0]
    with tempfile.TemporaryDirectory() as home:
        answer = Path(home) / "answer.py"
        answer.write_text(ref.exercise.solution)
        env = {**os.environ, "PTFUND_TUTOR_HOME": home}
        cli = median_run([sys.executable, "-m", "tutor", "check", ref.key, "--file", str(answer)], 3, env)
    torch_import = median_run([sys.executable, "-c", "import torch"], 5)

    print(f"{'measure':<58} {'ours':>9} {'baseline':>9} {'ratio':>6}  target")
    print(
        f"{'verdict from a warm spare, median of ' + str(len(rows)) + ' exercises':<58} {warm * 1000:7.0f}ms {'':>9} {'':>6}  <= 250 ms: {'meets' if warm <= 0.25 else 'MISSES'}"
    )
    label = 'ptfund-tutor check (cold) vs python -c "import torch"'
    print(
        f"{label:<58} {cli:8.2f}s {torch_import:8.2f}s {cli / torch_import:5.2f}x  <= 1.5x: {'meets' if cli / torch_import <= 1.5 else 'MISSES'}"
    )
    print("slowest verdicts: " + ", ".join(f"{k} {t * 1000:.0f} ms" for k, t, _ in slowest))
    failed = [k for k, _, ok in rows if not ok]
    if failed:
        print("reference solutions that did not pass: " + ", ".join(failed))


if __name__ == "__main__":
    main()
