"""Checks that keep their secrets (docs/trust.md, "Hidden checks"): a hidden check decides
without describing, in every place a learner reads a verdict, and its expected values never
reach the learner's kernel. Real kernels, real torch, real CLI processes where marked slow."""

from __future__ import annotations

import asyncio
import base64
import inspect
import json
import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from tutor.grading.gradebook import Cell, Gradebook, Row
from tutor.grading.gradescope import results
from tutor.grading.hiding import conceal
from tutor.grading.submissions import Learner, columns_for
from tutor.grading.verdict import CheckLine, Verdict
from tutor.packs import models as m
from tutor.packs.catalog import Catalog
from tutor.packs.loader import check_pack, load_pack

# The secrets: the hidden checks' expected values, which the learner must never see.
WORD = "plugh" * 3
SCALE = 271.828
SECRETS = ("plugh", "271.8")

MANIFEST = """\
id: secrets
title: Secrets
version: "1.0"
lessons: [vault]
"""

LESSON = """\
id: vault
title: The vault
intuition: Some checks keep their secrets.
exercises:
  - id: open
    title: Open the vault
    prompt: Make `t`, four floats, and `word`, a string.
    setup: |
      import torch
      x = torch.arange(2.0)
    solution: |
      t = torch.full((4,), 271.828)
      word = "plugh" * 3
      def probe(x):
          return x
    second_world: false
    second_world_reason: the answers are fixed values, computed from no data
    checks:
      - kind: tensor
        id: t-shape
        expr: t
        compare: [shape, dtype]
      - kind: tensor
        id: t-values
        expr: t
        hidden: true
      - kind: value
        id: the-word
        label: the secret word
        expr: word
        visibility: after_due_date
        message: The word is in the old stories.
      - kind: function
        id: probe-runs
        name: probe
        cases: 1
        devices: [default]
        args:
          - {type: tensor, shape: [2]}
    mistakes:
      - failed_check: the-word
        message: Say the word of the old cave.
      - failed_check: t-shape
        message: t needs four values.
"""

# Wrong where the hidden checks look, right where the visible ones do; ``probe`` runs when
# the judge calls it, after the hidden checks were decided, and searches this kernel for them
# (its prints are captured while the judge calls it: what it found shows in what it returns).
WRONG = """
import torch

t = torch.zeros(4)
word = "xyzzy"


def probe(x):
    import gc, linecache, struct, sys

    scale = 271828 / 1000  # built here: this code's text holds no secret
    needles = ("plu" + "gh", struct.pack("<f", scale), str(scale)[:5])
    found = []
    ip = get_ipython()
    for source in list(ip.history_manager.input_hist_raw):
        if needles[0] in source or needles[2] in source:
            found.append("history")
    for lines in list(linecache.cache.values()):
        if len(lines) > 2 and lines[2] and needles[0] in "".join(lines[2]):
            found.append("linecache")
    gc.unfreeze()
    for obj in gc.get_objects():
        if isinstance(obj, str) and needles[0] in obj:
            found.append("a string")
        elif isinstance(obj, dict) and any(isinstance(v, str) and needles[0] in v for v in list(obj.values())):
            found.append("a dict")
        elif type(obj) is torch.Tensor and not obj.is_meta and obj.numel() and obj.dtype == torch.float32:
            if needles[1] in obj.detach().cpu().numpy().tobytes():
                found.append("a tensor")
    return x + len(found)  # the (visible) probe check fails if anything was found
"""


def make_pack(root: Path, manifest: str = MANIFEST, lesson: str = LESSON) -> Path:
    (root / "vault").mkdir(parents=True)
    (root / "pack.yaml").write_text(manifest)
    (root / "vault" / "lesson.yaml").write_text(lesson)
    return root


@pytest.fixture
def pack(tmp_path: Path) -> Path:
    return make_pack(tmp_path / "secrets")


def exercise_of(pack: Path) -> m.Exercise:
    return load_pack(pack, cache=False).lessons[0].exercises[0]


def assert_no_secret(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, text
    for said in ("t-values", "the-word", "secret word", "old stories", "old cave"):
        assert said not in text, text


# ---------------------------------------------------------------- no kernel


def full_verdict(exercise: m.Exercise) -> Verdict:
    """What the judge decides on WRONG, every check described (as grade keeps it)."""
    return Verdict(
        "fail",
        "2 of 4 checks fail.",
        checks=[
            CheckLine("t-shape", "tensor", True, "t matches"),
            CheckLine(
                "t-values",
                "tensor",
                False,
                "t: values differ: 271.8280 expected at [0]",
                expected="tensor([271.8280, ...])",
                actual="0",
            ),
            CheckLine("the-word", "value", False, "The word is in the old stories.\nthe secret word is 'xyzzy'"),
            CheckLine("probe-runs", "function", True, "probe matches on 1 case"),
        ],
        mistakes=["Say the word of the old cave.", "Your code is right for one input only."],
        mistake_ids=[exercise.mistakes[0].stable_id, "auto:abc"],
    )


def test_a_concealed_verdict_counts_hidden_checks_and_says_nothing_else(pack: Path):
    exercise = exercise_of(pack)
    verdict = conceal(full_verdict(exercise), exercise)
    text = verdict.feedback()
    assert "2 hidden checks failed" in text, text
    assert "✓ t matches" in text and "probe matches" in text
    assert_no_secret(text)
    assert_no_secret(json.dumps(verdict.to_json()))
    assert verdict.mistakes == []  # the tied mistake and the automatic diagnosis (it cannot say whose)
    assert [c.hidden for c in verdict.checks] == [False, True, True, False]


def test_a_verdict_without_hidden_checks_is_unchanged(pack: Path):
    exercise = m.every_check_shown(exercise_of(pack))
    full = full_verdict(exercise)
    assert conceal(full, exercise) is full


def test_a_broken_hidden_check_is_not_named_in_the_headline(pack: Path):
    exercise = exercise_of(pack)
    broken = Verdict(
        "authoring-error",
        "This exercise is broken: the-word: this check could not run. Tell the pack's author.",
        checks=[CheckLine("t-shape", "tensor", True, "ok"), CheckLine("the-word", "value", False, "could not run")],
    )
    headline = conceal(broken, exercise).headline
    assert "the-word" not in headline and "hidden checks could not run" in headline


def test_the_app_shows_the_count_only(pack: Path):
    from tutor.app.widgets.check_results import verdict_content

    exercise = exercise_of(pack)
    verdict = conceal(full_verdict(exercise), exercise)
    shown = verdict_content(verdict).plain
    assert "2 hidden checks failed" in shown
    assert_no_secret(shown)


def test_pack_policy_hides_every_check_that_does_not_say(tmp_path: Path):
    lesson = LESSON.replace("        id: probe-runs\n", "        id: probe-runs\n        hidden: false\n")
    root = make_pack(tmp_path / "all", manifest=MANIFEST + "hidden_checks: all\n", lesson=lesson)
    checks = exercise_of(root).checks
    assert [c.is_hidden for c in checks] == [True, True, True, False]
    assert [c.gradescope_visibility for c in checks] == ["hidden", "hidden", "after_due_date", "visible"]


@pytest.mark.parametrize(
    ("old", "new", "field", "says"),
    [
        ("        hidden: true\n", "        hidden: sometimes\n", "hidden", "valid boolean"),
        ("        visibility: after_due_date\n", "        visibility: later\n", "visibility", "after_published"),
        ("        hidden: true\n", "        hidden: true\n        visibility: visible\n", "", "contradicts"),
        (
            "        visibility: after_due_date\n",
            "        visibility: hidden\n        hidden: false\n",
            "",
            "contradicts",
        ),
    ],
)
def test_validate_rejects_a_bad_value_at_file_line_col(tmp_path: Path, old: str, new: str, field: str, says: str):
    assert old in LESSON
    root = make_pack(tmp_path / "bad", lesson=LESSON.replace(old, new, 1))
    _, problems = check_pack(root, cache=False)
    assert problems, "a bad value passed"
    text = "\n".join(str(p) for p in problems)
    assert re.search(r"vault/lesson\.yaml:\d+:\d+: .*" + re.escape(field), text), text
    assert says in text, text
    line = LESSON.replace(old, new, 1).splitlines().index(new.splitlines()[-1]) + 1
    assert any(line - 6 <= p.line <= line for p in problems), (line, text)  # at the check or its field


def test_validate_rejects_a_bad_pack_policy(tmp_path: Path):
    root = make_pack(tmp_path / "bad", manifest=MANIFEST + "hidden_checks: some\n")
    _, problems = check_pack(root, cache=False)
    assert any(p.file.endswith("pack.yaml") and p.line == 5 and "hidden_checks" in str(p) for p in problems), problems


def _gradebook(pack: Path, **policy) -> Gradebook:
    verdict = full_verdict(exercise_of(pack))
    columns = columns_for(list(Catalog.load([str(pack)], builtin=False).exercises()))
    learner = Learner(name="Ann", source=pack, code={columns[0].name: WRONG})
    row = Row(learner, {columns[0].name: Cell("fail", verdict)})
    return Gradebook(columns, [row], **policy)


def test_gradescope_visibility_per_test_and_no_secret_unless_revealed(pack: Path):
    book = _gradebook(pack)
    data = results(book)
    assert [(t["name"], t["visibility"], t["status"]) for t in data["tests"]] == [
        ("vault/open: Open the vault", "visible", "failed"),
        ("vault/open: hidden check 1", "hidden", "failed"),
        ("vault/open: hidden check 2", "after_due_date", "failed"),
    ]
    assert_no_secret(json.dumps(data))
    assert "2 hidden checks failed" in data["tests"][0]["output"]
    revealed = results(_gradebook(pack, reveal=True))
    text = json.dumps(revealed)
    assert "271.8" in text and "old stories" in text and "Say the word" in text
    assert [t["name"] for t in revealed["tests"][1:]] == ["vault/open: t-values", "vault/open: the-word"]
    assert [t["visibility"] for t in revealed["tests"]] == ["visible", "hidden", "after_due_date"]


def test_grade_json_conceals_each_learners_verdict_unless_revealed(pack: Path):
    learner = _gradebook(pack).to_json()["learners"][0]["verdicts"]["vault/open"]
    assert sum(c["hidden"] for c in learner["checks"]) == 2
    assert_no_secret(json.dumps(learner))
    revealed = _gradebook(pack, reveal=True).to_json()["learners"][0]["verdicts"]["vault/open"]
    assert "old stories" in json.dumps(revealed) and not any(c["hidden"] for c in revealed["checks"])


def test_grade_policy_all_hides_what_the_pack_shows(pack: Path):
    data = results(_gradebook(pack, hide_all=True))
    assert [t["visibility"] for t in data["tests"]] == ["visible", "hidden", "hidden", "after_due_date", "hidden"]
    assert "2 hidden checks failed" in data["tests"][0]["output"]
    assert "2 hidden checks passed" in data["tests"][0]["output"]
    assert "t matches" not in json.dumps(data)


# ---------------------------------------------------------------- real kernels


def _blobs(cell: str) -> list[bytes]:
    """What a cell for the learner's kernel carries, decoded: the cell's own text (a frame's
    structure is JSON in it) and every run of base64 (a frame's storages, a torch.save)."""
    out = [cell.encode()]
    for run in re.findall(r"[A-Za-z0-9+/]{40,}={0,2}", cell):
        try:
            out.append(base64.b64decode(run, validate=True))
        except ValueError:
            pass
    return out


async def _verify_watching(exercise: m.Exercise, code: str) -> tuple[Verdict, list[str]]:
    """The two-kernel verification, keeping every cell sent to the learner's kernel, every
    reply to its prompts, and every byte the pipe carried."""
    from tutor.engine import KernelSession
    from tutor.engine.pool import warm_up
    from tutor.grading.judging import verify_judged

    learner, judge = KernelSession(), KernelSession()
    sent: list[str] = []
    execute = learner.execute

    async def watched(cell: str, **kwargs):
        sent.append(cell)
        stdin = kwargs.get("stdin")
        if stdin is not None:
            # The judge's questions reach the learner's kernel as replies to its input() prompts.
            async def recording(prompt: str, _stdin=stdin):
                reply = _stdin(prompt)
                reply = await reply if inspect.isawaitable(reply) else reply
                if isinstance(reply, str):
                    sent.append(reply)
                return reply

            kwargs["stdin"] = recording
        return await execute(cell, **kwargs)

    learner.execute = watched  # type: ignore[method-assign]
    # Over the pipe the questions are bytes the host copies: every byte copied either way is kept.
    from tutor.grading import pipe as host_pipe

    copied: dict[int, list[bytes]] = {}
    real_copy = host_pipe._copy

    class Recorded:
        def __init__(self, sock):
            self.sock = sock
            copied[id(sock)] = []

        def recv(self, size: int) -> bytes:
            data = self.sock.recv(size)
            copied[id(self.sock)].append(data)
            return data

    host_pipe._copy = lambda source, target: real_copy(Recorded(source), target)  # type: ignore[assignment]
    try:
        await asyncio.gather(learner.start(), judge.start())
        await asyncio.gather(warm_up(learner, timeout=120), warm_up(judge, timeout=120))
        verdict = await verify_judged(exercise, code, learner, judge, limit=exercise.time_limit)
    finally:
        host_pipe._copy = real_copy  # type: ignore[assignment]
        await asyncio.gather(learner.shutdown(), judge.shutdown(), return_exceptions=True)
    sent += [b"".join(chunks).decode(errors="replace") for chunks in copied.values()]
    return verdict, sent


@pytest.mark.slow
def test_hidden_expected_values_never_reach_the_learners_kernel(pack: Path):
    exercise = exercise_of(pack)
    assert not any(secret in WRONG for secret in SECRETS)
    verdict, sent = asyncio.run(_verify_watching(exercise, WRONG))
    blobs = [blob for cell in sent for blob in _blobs(cell)]
    assert any(b"target" in blob for blob in blobs), "the search reads what crosses (the judge's call of probe)"
    for cell in sent:
        assert "plugh" not in cell and "271.8" not in cell, cell[:500]
    for blob in blobs:
        assert b"plugh" not in blob and struct.pack("<f", SCALE) not in blob
    assert verdict.status == "fail", verdict.feedback()
    lines = verdict.lines()
    assert ("✓", "probe matches the reference on 1 generated case (cpu)") in lines, lines  # it found nothing
    assert ("✗", "2 hidden checks failed") in lines, lines
    assert_no_secret(verdict.feedback() + json.dumps(verdict.to_json()))
    # The probe finds a secret that is there (the setup's text, once it holds one), and the
    # same code with the checks shown is told what the judge decided on.
    planted = exercise.model_copy(update={"setup": exercise.setup + "# plugh\n"})
    shown, _ = asyncio.run(_verify_watching(m.every_check_shown(planted), WRONG))
    assert "probe" in shown.feedback() and ("✓", "probe matches the reference on 1 generated case (cpu)") not in (
        shown.lines()
    ), shown.feedback()
    assert "271.8" in json.dumps(shown.to_json()) and "old stories" in shown.feedback(), shown.feedback()


def cli(*args: str, home: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PTFUND_TUTOR_HOME": str(home), "PTFUND_TUTOR_CACHE": str(home / "cache")}
    return subprocess.run(
        [sys.executable, "-m", "tutor", *args], capture_output=True, text=True, env=env, timeout=timeout
    )


@pytest.mark.slow
def test_check_says_how_many_hidden_checks_failed_and_nothing_more(pack: Path, tmp_path: Path):
    code = tmp_path / "wrong.py"
    code.write_text(WRONG)
    r = cli("--pack", str(pack), "check", "vault/open", "--file", str(code), "--json", "--trust", home=tmp_path / "h")
    assert r.returncode == 1, r.stderr
    verdict = json.loads(r.stdout)
    assert sum(c["hidden"] and not c["passed"] for c in verdict["checks"]) == 2, verdict
    assert_no_secret(r.stdout + r.stderr)
    r = cli("--pack", str(pack), "check", "vault/open", "--file", str(code), "--trust", home=tmp_path / "h")
    assert "2 hidden checks failed" in r.stdout, r.stdout
    assert_no_secret(r.stdout + r.stderr)


@pytest.mark.slow
def test_gradescope_run_with_hidden_checks_shows_no_expected_value_until_revealed(pack: Path, tmp_path: Path):
    autograder = tmp_path / "autograder"
    (autograder / "submission" / "vault").mkdir(parents=True)
    (autograder / "submission" / "vault" / "open.py").write_text(WRONG)
    home = tmp_path / "h"
    r = cli("--pack", str(pack), "grade", "--gradescope", str(autograder), "--trust", home=home)
    assert r.returncode == 0, r.stderr
    text = (autograder / "results" / "results.json").read_text()
    data = json.loads(text)
    assert_no_secret(text)
    assert [(t["visibility"], t["status"]) for t in data["tests"]] == [
        ("visible", "failed"),
        ("hidden", "failed"),
        ("after_due_date", "failed"),
    ]
    assert "2 hidden checks failed" in data["tests"][0]["output"]
    # After the deadline: the same grading (its verdict from the cache), described in full.
    r = cli("--pack", str(pack), "grade", "--gradescope", str(autograder), "--trust", "--reveal", home=home)
    assert r.returncode == 0, r.stderr
    text = (autograder / "results" / "results.json").read_text()
    assert "271.8" in text and "old stories" in text and "Say the word" in text, text


@pytest.mark.slow
def test_watch_says_how_many_hidden_checks_failed_and_nothing_more(pack: Path, tmp_path: Path):
    import threading
    import time

    folder = tmp_path / "exercises"
    env = {**os.environ, "PTFUND_TUTOR_HOME": str(tmp_path / "h"), "PTFUND_TUTOR_NO_WARM": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tutor", "--pack", str(pack), "watch", str(folder), "--trust"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    said: list[str] = []
    reader = threading.Thread(target=lambda: said.extend(iter(proc.stdout.readline, "")), daemon=True)
    reader.start()

    def wait(condition, what: str, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert proc.poll() is None and time.monotonic() < deadline, f"{what}: {''.join(said)}"
            time.sleep(0.2)

    try:
        file = folder / "secrets" / "vault" / "open.py"  # a pack of its own: a folder of its own
        wait(lambda: "save it to check it" in "".join(said), "the first exercise")
        # The file watch starts just after that line: save again (other text) until a check begins.
        saves = 0
        while "Checking" not in "".join(said):
            assert saves < 60 and proc.poll() is None, "".join(said)
            file.write_text(WRONG + f"# save {saves}\n")
            saves += 1
            deadline = time.monotonic() + 5
            while "Checking" not in "".join(said) and time.monotonic() < deadline:
                time.sleep(0.2)
        wait(lambda: "hidden checks failed" in "".join(said), "the verdict")
        proc.stdin.write("x\n")
        proc.stdin.flush()
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(timeout=10)
    text = "".join(said)
    assert "✗ 2 hidden checks failed" in text, text
    assert_no_secret(text)


@pytest.mark.slow
def test_pack_test_reads_hidden_checks_in_full(tmp_path: Path):
    """An author's wrong solution may expect a hidden check's own message: pack test proves
    it against the checks described in full."""
    wrong = (
        "    wrong_solutions:\n"
        "      - code: |\n"
        "          t = torch.full((4,), 271.828)\n"
        "          word = 'xyzzy'\n"
        "          def probe(x):\n"
        "              return x\n"
        "        expect: The word is in the old stories.\n"
    )
    lesson = LESSON.replace("    mistakes:\n", wrong + "    mistakes:\n", 1)
    root = make_pack(tmp_path / "secrets", lesson=lesson)
    r = cli("pack", "test", str(root), "--mutants", "off", "--trust", "--json", home=tmp_path / "h")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    rows = {row["case"]: row for row in json.loads(r.stdout)["rows"]}
    assert rows["wrong 1"]["ok"] and rows["solution"]["ok"], rows


def test_grade_takes_a_policy_and_reveal(capsys):
    from tutor.cli import build_parser

    args = build_parser().parse_args(["grade", "subs", "--hidden-checks", "all", "--reveal"])
    assert args.hidden_checks == "all" and args.reveal
    default = build_parser().parse_args(["grade", "subs"])
    assert default.hidden_checks == "marked" and not default.reveal
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["grade", "subs", "--hidden-checks", "some"])
    assert exit_.value.code == 2 and "invalid choice: 'some'" in capsys.readouterr().err
