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

``--time`` also measures one verification with and without the protocol trace.
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


class _NoTrace:
    def install(self):
        return self

    def uninstall(self):
        pass

    def recording(self, *a, **k):
        import contextlib

        return contextlib.nullcontext()


def verify(exercise, code: str, trace: bool = True):
    payload = build_payload(exercise, code, "cpu")
    if not trace:
        real = runner.Tracer
        runner.Tracer = _NoTrace
        try:
            return verdict_from_result(runner.run_verification(payload))
        finally:
            runner.Tracer = real
    return verdict_from_result(runner.run_verification(payload))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--show", action="store_true")
    parser.add_argument("--no-trace", action="store_true")
    parser.add_argument("--time", action="store_true")
    args = parser.parse_args(argv)
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
        ex = exs["training-loop/train-step"]
        code = (BUGGY / "01_train_no_zero_grad.py").read_text()
        for label, trace in (("with trace", True), ("without trace", False), ("with trace", True)):
            runs = []
            for _ in range(7):
                t = time.perf_counter()
                verify(ex, code, trace)
                runs.append(time.perf_counter() - t)
            print(f"{label:<14} median {statistics.median(runs) * 1000:.1f} ms over 7 (training-loop/train-step)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
