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

``--held-out`` counts, on buggy files nobody wrote against the diagnoses, how often the
feedback names the bug, states another cause, or says none, with the pack's authored
feedback and without it (see ``held_out``):

    python benchmarks/feedback.py --held-out [--show]
"""

from __future__ import annotations

import argparse
import builtins
import collections
import keyword
import re
import signal
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tutor.checks import runner  # noqa: E402
from tutor.checks.edits import EDIT_PHRASE, EXTRA_PHRASE, MISSING_PHRASE, MOVED_PHRASE, PLACE_PHRASE  # noqa: E402
from tutor.grading.mutants import mutants  # noqa: E402
from tutor.grading.verify import build_payload, verdict_from_result  # noqa: E402
from tutor.packs.loader import check_pack  # noqa: E402

# The sentences read off the reference's own statements: a mutant of the reference is named
# by them trivially, so the benchmark counts without them too.
EDIT_PHRASES = (EDIT_PHRASE, MISSING_PHRASE, MOVED_PHRASE, EXTRA_PHRASE, PLACE_PHRASE)

BUGGY = Path(__file__).resolve().parent / "buggy"
SEEDED = Path(__file__).resolve().parent / "seeded"


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


def exercises(strip: bool = True):
    pack, problems = check_pack(ROOT / "lessons")
    if pack is None:
        raise SystemExit(f"the built-in pack does not load: {problems[:3]}")
    return {f"{les.id}/{ex.id}": stripped(ex) if strip else ex for les in pack.lessons for ex in les.exercises}


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


# ---------------------------------------------------------------- held-out files

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
# Words every feedback may say whatever the bug: never evidence that a bug was named.
GENERIC = frozenset(keyword.kwlist) | frozenset(dir(builtins)) | {"self", "torch", "nn", "F", "np", "DEVICE"}
HUNG_AFTER = 60  # seconds of one in-process verification before it counts as hung


class Hung(BaseException):
    pass


def _word(token: str) -> str:
    return rf"(?<!\w){re.escape(token)}(?!\w)"


SHOWN_FIELDS = ("expr", "label", "name", "names", "shares_storage_with", "independent_of")


def check_words(exercise) -> set:
    """Identifiers of what the exercise's check lines show (expressions, labels, names): they
    say them whatever the bug is. A python check's code is never shown."""
    words: set = set()
    for c in exercise.checks:
        fields = c.model_dump()
        for key in SHOWN_FIELDS:
            value = fields.get(key)
            for text in value if isinstance(value, list) else [value]:
                if isinstance(text, str):
                    words.update(re.findall(IDENT, text))
    return words


def mutant_cues(m, exclude: set) -> list:
    """Regexes that name a mutant's bug, from its diff alone: its line ("line N"), an
    identifier the edit removed or added, the dim it changed, the in-place call it made."""
    old = "\n".join(line[1:] for line in m.diff.splitlines() if line.startswith("-"))
    new = "\n".join(line[1:] for line in m.diff.splitlines() if line.startswith("+"))
    a, b = collections.Counter(re.findall(IDENT, old)), collections.Counter(re.findall(IDENT, new))
    cues = [rf"\bline {m.line}\b"]
    if m.operator == "swap-names":
        # the same names, two of them in each other's place: a sentence naming both
        x, y = re.findall(IDENT, old), re.findall(IDENT, new)
        swapped = sorted({p for p, q in zip(x, y, strict=False) if p != q} - GENERIC)
        if len(swapped) == 2:
            cues.append(rf"{_word(swapped[0])}[^\n;]*{_word(swapped[1])}|{_word(swapped[1])}[^\n;]*{_word(swapped[0])}")
        return cues
    # only what the edit calls differently (zero_grad, sum, add_): a receiver's name (loss,
    # model) is said by feedback about anything
    called = set(re.findall(rf"({IDENT})\s*\(", old + "\n" + new))
    changed = ((a - b) + (b - a)).keys() & called
    cues += [_word(t) for t in sorted(changed) if t not in GENERIC and t not in exclude and len(t) > 1]
    # a word a check line shows anyway (a label's "step") still names the bug as a call: step()
    cues += [rf"(?<!\w){re.escape(t)}\(" for t in sorted(changed) if t in exclude and t not in GENERIC]
    if m.operator == "dim":
        numbers = set(re.findall(r"-?\d+", old)) ^ set(re.findall(r"-?\d+", new))
        if numbers:
            cues.append(rf"\b(dim|dims|dimension|axis)\b\W{{0,3}}({'|'.join(sorted(numbers))})\b")
    if m.operator == "in-place":
        cues.append(r"in-place|in place|inplace")
    if m.operator == "weights-only":
        cues.append(r"weights_only|pickl")
    return cues


def said(verdict) -> str:
    """What the feedback states (headline, causes, check lines), with quoted source taken
    out: a quote of the learner's line is not a statement about it (its number counts)."""
    text = "\n".join([verdict.headline] + [t for _, t in verdict.lines()])
    return re.sub(r"`[^`\n]*`", "``", text)


def classify(verdict, cues: list) -> str:
    """named: the feedback names the bug (a cue matches); misleading: it states a cause
    (a targeted message) and none names the bug; silent: only the checks' diffs."""
    if verdict.passed:
        return "passed"
    text = said(verdict)
    if "Hung" in text:
        return "hung"
    if any(re.search(c, text) for c in cues):
        return "named"
    return "misleading" if verdict.mistakes else "silent"


def _on_alarm(signum, frame):
    raise Hung()


def verify_bounded(exercise, code: str):
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(HUNG_AFTER)
    try:
        return verify(exercise, code)
    except Hung:
        return None
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def held_out_cases(exs) -> list:
    """(source, name, exercise id, code, cues, what) for every held-out file."""
    cases = []
    for path in sorted(SEEDED.glob("*.py")):
        h = header(path)
        cue = re.search(r"#\s*cues:\s*(.*)", path.read_text())
        cases.append(("seeded", path.name, h["exercise"], path.read_text(), [cue.group(1).strip()], h["bug"]))
    for path in sorted(BUGGY.glob("*.py")):
        h = header(path)
        cases.append(("buggy", path.name, h["exercise"], path.read_text(), [h["named-by"]], h["bug"]))
    for key, ex in exs.items():
        exclude = check_words(ex)
        for m in mutants(ex.solution):
            if m.operator == "literal":
                continue  # the reference's own values typed in: not a bug to name
            what = " / ".join(line.strip() for line in m.diff.splitlines())
            cases.append(("mutants", m.id, key, m.source, mutant_cues(m, exclude), f"{m.operator}: {what}"))
    return cases


def table(kept: list) -> None:
    counts: dict = collections.defaultdict(collections.Counter)
    bare: dict = collections.defaultdict(collections.Counter)
    for k in kept:
        counts[(k["source"], k["feedback"])][k["outcome"]] += 1
        bare[(k["source"], k["feedback"])][k.get("without_edits", k["outcome"])] += 1
    print(
        "\n| files | feedback | files | named | misleading | silent | not caught (passed) | hung "
        "| without the source diff: named / misleading / silent |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for (source, label), c in sorted(counts.items()):
        total, b = sum(c.values()), bare[(source, label)]
        print(
            f"| {source} | {label} | {total} | {c['named']} | {c['misleading']} | {c['silent']} | "
            f"{c['passed']} | {c['hung']} | {b['named']} / {b['misleading']} / {b['silent']} |"
        )


def _without_edits(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not any(p in line for p in EDIT_PHRASES))


def outcome_without_edits(outcome: str, text: str | None, mistakes: list | None, cues: list) -> str:
    """The outcome had the feedback said nothing from the two sources' difference alone
    (tutor/checks/edits.py): a mutant is one edit of the reference by construction, so that
    rule names nearly every mutant; the value, trace and error causes are counted apart."""
    if outcome not in ("named", "misleading", "silent"):
        return outcome
    rest = [m for m in mistakes or [] if not any(p in m for p in EDIT_PHRASES)]
    if any(re.search(c, _without_edits(text or "")) for c in cues):
        return "named"
    return "misleading" if rest else "silent"


def reclassify(path: Path) -> None:
    """The table again from a --save file, with the cues as this file makes them now."""
    import json

    kept = json.loads(path.read_text())
    cues = {(c[0], c[1], c[2]): c[4] for c in held_out_cases(exercises(strip=False))}
    for k in kept:
        if k["outcome"] in ("named", "misleading", "silent"):
            text = k["said"] or ""
            hit = any(re.search(c, text) for c in cues[(k["source"], k["file"], k["exercise"])])
            k["outcome"] = "named" if hit else ("misleading" if k["mistakes"] else "silent")
        k["without_edits"] = outcome_without_edits(
            k["outcome"], k["said"], k["mistakes"], cues[(k["source"], k["file"], k["exercise"])]
        )
    table(kept)


def held_out(show: bool = False, save: Path | None = None) -> None:
    authored, bare = exercises(strip=False), exercises(strip=True)
    cases = held_out_cases(authored)
    kept = []
    for source, name, key, code, cues, what in cases:
        for label, exs in (("authored", authored), ("stripped", bare)):
            verdict = verify_bounded(exs[key], code)
            outcome = "hung" if verdict is None else classify(verdict, cues)
            kept.append(
                {
                    "source": source,
                    "file": name,
                    "exercise": key,
                    "feedback": label,
                    "bug": what,
                    "cues": cues,
                    "outcome": outcome,
                    "said": None if verdict is None else said(verdict),
                    "mistakes": None if verdict is None else verdict.mistakes,
                }
            )
            k = kept[-1]
            k["without_edits"] = outcome_without_edits(outcome, k["said"], k["mistakes"], cues)
            if show or outcome in ("misleading", "silent"):
                print(f"{outcome:<10} {label:<8} {source:<7} {key} {name}: {what}")
                if verdict is not None and (show or outcome == "misleading"):
                    print("    " + "\n    ".join(verdict.mistakes or ["(no cause stated)"]))
    if save is not None:
        import json

        save.write_text(json.dumps(kept, indent=1))
    table(kept)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--show", action="store_true")
    parser.add_argument("--no-trace", action="store_true")
    parser.add_argument("--time", action="store_true")
    parser.add_argument("--loop", action="store_true", help="only the training-loop overhead of the trace")
    parser.add_argument("--held-out", action="store_true", help="named / misleading / silent on held-out files")
    parser.add_argument("--save", type=Path, help="with --held-out: every verdict's text and outcome, as JSON")
    parser.add_argument("--reclassify", type=Path, help="the --held-out table again from a --save file")
    args = parser.parse_args(argv)
    if args.reclassify:
        reclassify(args.reclassify)
        return 0
    if args.held_out:
        held_out(args.show, args.save)
        return 0
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
