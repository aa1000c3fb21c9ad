"""How often the product's own feedback names the bug, with no authored feedback at all.

Every file in benchmarks/buggy/ is a realistic wrong solution of one exercise of the
built-in pack, with a header::

    # exercise: LESSON/EXERCISE
    # bug: what is wrong (for people)
    # named-by: REGEX   (feedback that matches it names the bug)

The exercise is stripped of its ``mistakes``, ``wrong_solutions`` and every check
``message`` (as scripts/strip_authored_feedback.py does to a pack on disk), the file is
verified in this process by the check library (the same run_verification a kernel runs),
and the feedback text is matched against the regex. Run with ``--show`` to read them all.

    python benchmarks/feedback.py [--show] [--no-trace] [FILE ...]

``--time`` also verifies every reference solution with and without the protocol trace;
``--loop`` measures the trace's cost per step of a training loop (CPU time).
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tutor.checks import runner  # noqa: E402
from tutor.grading.verify import build_payload, verdict_from_result  # noqa: E402
from tutor.packs.loader import check_pack  # noqa: E402

BUGGY = Path(__file__).resolve().parent / "buggy"


def header(path: Path) -> dict:
    out = {}
    for line in path.read_text().splitlines():
        m = re.match(r"#\s*(exercise|bug|named-by):\s*(.*)", line)
        if m:
            out[m.group(1)] = m.group(2).strip()
    return out


def stripped(exercise):
    checks = [c.model_copy(update={"message": None}) for c in exercise.checks]
    return exercise.model_copy(update={"mistakes": [], "wrong_solutions": [], "checks": checks})


def exercises():
    pack, problems = check_pack(ROOT / "lessons")
    if pack is None:
        raise SystemExit(f"the built-in pack does not load: {problems[:3]}")
    return {f"{les.id}/{ex.id}": stripped(ex) for les in pack.lessons for ex in les.exercises}


def verify(exercise, code: str, trace: bool = True):
    payload = build_payload(exercise, code, "cpu")
    payload["trace"] = trace
    return verdict_from_result(runner.run_verification(payload))


def timing(exs, reps: int = 3) -> None:
    """Each exercise's reference solution verified with and without the trace, interleaved;
    the best of ``reps`` per exercise, then the median over exercises (in-process: the
    kernel round trip, the same either way, is left out)."""
    with_t, without_t = [], []
    for ex in exs.values():
        best = {True: float("inf"), False: float("inf")}
        for _ in range(reps):
            for trace in (True, False):
                t = time.perf_counter()
                verify(ex, ex.solution, trace)
                best[trace] = min(best[trace], time.perf_counter() - t)
        with_t.append(best[True])
        without_t.append(best[False])
    a, b = statistics.median(with_t), statistics.median(without_t)
    print(f"reference solutions, {len(with_t)} exercises, median of best-of-{reps}:")
    print(f"  with trace     {a * 1000:7.1f} ms")
    print(f"  without trace  {b * 1000:7.1f} ms   (trace costs {(a - b) * 1000:+.1f} ms, {a / b:.2f}x)")
    print(f"  total          {sum(with_t):7.2f} s vs {sum(without_t):.2f} s")


LOOP = """
import torch
from torch import nn
torch.manual_seed(0)
X = torch.randn(512, 64); y = torch.randint(0, 10, (512,))
model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
loss_fn = nn.CrossEntropyLoss()
for epoch in range(10):
    model.train()
    for i in range(0, 512, 64):
        xb, yb = X[i:i+64], y[i:i+64]
        opt.zero_grad()
        loss = loss_fn(model((xb - 0.5) / 2.0), yb)
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        acc = (model(X).argmax(1) == y).float().mean().item()
"""


def loop_overhead(rounds: int = 9) -> None:
    """CPU time of an 80-step training loop run as learner code, traced and not, alternating
    (one torch thread, process time: steadier than wall time on a shared machine)."""
    import torch

    from tutor.checks.namespaces import YOUR_CODE
    from tutor.checks.trace import Tracer

    torch.set_num_threads(1)
    code = compile(LOOP, YOUR_CODE, "exec")

    def run(trace: bool) -> float:
        tracer = Tracer().install() if trace else None
        try:
            start = time.process_time()
            if tracer is not None:
                with tracer.recording("learner"):
                    exec(code, {})
            else:
                exec(code, {})
            return time.process_time() - start
        finally:
            if tracer is not None:
                tracer.uninstall()

    run(False), run(True)
    times: dict = {True: [], False: []}
    for _ in range(rounds):
        for trace in (True, False):
            times[trace].append(run(trace))
    a, b = statistics.median(times[True]), statistics.median(times[False])
    print(f"80-step training loop, CPU time, median of {rounds}: traced {a * 1000:.1f} ms, plain {b * 1000:.1f} ms")
    print(f"  trace costs {(a - b) * 1000 / 90:.3f} ms per step ({a / b:.2f}x of this tiny model's Python-bound step)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--show", action="store_true")
    parser.add_argument("--no-trace", action="store_true")
    parser.add_argument("--time", action="store_true")
    parser.add_argument("--loop", action="store_true", help="only the training-loop overhead of the trace")
    args = parser.parse_args(argv)
    if args.loop:
        loop_overhead()
        return 0
    exs = exercises()
    files = args.files or sorted(BUGGY.glob("*.py"))
    named = 0
    for path in files:
        h = header(path)
        ex = exs[h["exercise"]]
        verdict = verify(ex, path.read_text(), trace=not args.no_trace)
        text = verdict.feedback()
        ok = not verdict.passed and re.search(h["named-by"], text, re.IGNORECASE) is not None
        named += ok
        print(f"{'named ' if ok else 'MISSED'} {path.name:<36} {h['bug']}")
        if args.show or not ok:
            print("    " + text.replace("\n", "\n    "))
    print(f"\n{named} of {len(files)} named")
    if args.time:
        timing(exs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
