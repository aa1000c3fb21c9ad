"""`grade --report DIR`: a synthetic class of 30 learners graded end to end (real kernels,
real torch), and the report's counts, rates and ranking read back from report.json,
report.md and report.html."""

from __future__ import annotations

import html
import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.test_grade import LESSON, cli, write
from tutor.escape import for_html, for_markdown, for_terminal
from tutor.grading.mistake_ids import diagnosis_id, ids_by_message
from tutor.packs.catalog import Catalog
from tutor.packs.loader import check_pack
from tutor.packs.scaffold import new_pack

HOSTILE = "<script>alert(1) **x** [y](z) | `q`"  # a folder's name: no "/"
# A bug no authored mistake names: the product's own diagnosis (values in the wrong order).
TRANSPOSED = (
    "import torch\n\nfeatures = torch.tensor(rows, dtype=torch.float32, device=DEVICE)\n"
    "labels = torch.tensor(classes, device=DEVICE)\nfeatures = features.t().reshape(features.shape)\n"
)
# backward() twice without clearing: the gradient-accumulation diagnosis.
TWICE = (
    "import torch\n\nw = (torch.randn(3, 2, device=DEVICE) * 0.01).requires_grad_()\n"
    "loss = (x @ w).sum()\nloss.backward()\nloss = (x @ w).sum()\nloss.backward()\n"
)


def _exercises():
    found = {r.exercise.id: r.exercise for r in Catalog.load().exercises(LESSON)}
    return found["features-and-labels"], found["leaf-parameter"]


def _export(item: str, attempts: list[tuple[str, str]]) -> dict:
    return {
        "format": "ptfund-tutor-progress",
        "version": 1,
        "attempts": [
            {"uid": f"u{i}", "pack": "pytorch-fundamentals", "item": f"{LESSON}/{item}", "passed": False}
            | {"at": at, "code": code, "content_hash": ""}
            for i, (at, code) in enumerate(attempts)
        ],
    }


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """30 learners: for features-and-labels 12 right, 7 with one authored mistake, 4 with the
    other, 3 with a bug only the automatic diagnosis names, 4 who hand in nothing; for
    leaf-parameter (learners 10 to 23) 4 right, 5 + 2 with its authored mistakes, 3
    diagnosed. Three of the first exercise's right ones hand in progress exports (3, 2 and 1
    attempts) instead of folders."""
    feats, leaf = _exercises()
    root = tmp_path_factory.mktemp("class30")
    subs = root / "subs"
    subs.mkdir()
    names = [f"learner{i:02d}" for i in range(30)]
    names[13] = HOSTILE  # makes the first authored mistake: listed in the ranking's "who"
    names[29] = os.fsdecode(b"learner\xff")  # a folder named in no encoding (hands in nothing)
    plan_a = (
        [feats.solution] * 12
        + [feats.wrong_solutions[0].code] * 7  # features left int64
        + [feats.wrong_solutions[2].code] * 4  # labels made float
        + [TRANSPOSED] * 3
    )
    plan_b = [leaf.solution] * 4 + [leaf.wrong_solutions[0].code] * 5 + [leaf.wrong_solutions[1].code] * 2 + [TWICE] * 3
    exports = {0: 3, 1: 2, 2: 1}  # learner index -> attempts in their export
    for i, name in enumerate(names):
        if i in exports:
            at = ["2026-03-02T10:00:00+00:00", "2026-03-02T10:05:00+00:00", "2026-03-02T10:20:00+00:00"]
            codes = [feats.starter, feats.wrong_solutions[0].code, feats.solution]
            tries = list(zip(at, codes, strict=True))[-exports[i] :]
            tries[-1] = (tries[-1][0], feats.solution)
            (subs / f"{name}.json").write_text(json.dumps(_export(feats.id, tries)))
            continue
        if i < len(plan_a):
            write(subs, name, feats.id, plan_a[i] + f"# {i}\n")
        (subs / name).mkdir(exist_ok=True)  # those who hand in nothing have an empty folder
        if 0 <= i - 10 < len(plan_b):
            write(subs, name, leaf.id, plan_b[i - 10] + f"# {i}\n")
    out = root / "report"
    args = ("grade", str(subs), "--lesson", LESSON, "--jobs", "2", "--timeout", "20", "--json", "--report", str(out))
    run = cli(*args, home=root / "home", timeout=1200)
    assert run.returncode == 0, run.stderr[-3000:]
    data = json.loads((out / "report.json").read_text())
    rerun = cli(*args, home=root / "home", timeout=1200)  # every verdict from the cache
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    return {
        "rerun": json.loads((out / "report.json").read_text()),
        "verdicts": {row["learner"]: row["verdicts"] for row in json.loads(rerun.stdout)["learners"]},
        "names": names,
        "data": data,
        "md": (out / "report.md").read_text(),
        "html": (out / "report.html").read_text(),
        "ex": (feats, leaf),
        "stderr": run.stderr,
    }


def _by_exercise(data: dict) -> dict:
    return {ex["exercise"]: ex for ex in data["exercises"]}


@pytest.mark.slow
def test_pass_rates_per_exercise_and_per_check(report):
    data, names = report["data"], report["names"]
    assert data["learners"] == 30
    exs = _by_exercise(data)
    a, b = exs[f"{LESSON}/features-and-labels"], exs[f"{LESSON}/leaf-parameter"]
    assert (a["submitted"], a["passed"], a["grades"]["missing"]) == (26, 12, 4)
    assert a["pass_rate"] == pytest.approx(12 / 30) and a["pass_rate_submitted"] == pytest.approx(12 / 26)
    checks = {c["check"]: c for c in a["checks"]}
    # features fails for int64 (7) and the transposed values (3); labels for float labels (4)
    assert (checks["features"]["passed"], checks["features"]["ran"]) == (16, 26)
    assert (checks["labels"]["passed"], checks["labels"]["ran"]) == (22, 26)
    assert (b["submitted"], b["passed"], b["grades"]["missing"]) == (14, 4, 16)
    nobody = exs[f"{LESSON}/follow-the-input"]
    assert (nobody["submitted"], nobody["passed"], nobody["pass_rate_submitted"]) == (0, 0, None)
    assert sum(row["passed"] for row in data["class"]) == 12 + 4
    assert {row["learner"] for row in data["class"]} == set(names)


@pytest.mark.slow
def test_mistakes_ranked_by_learners_with_who_and_stable_ids(report):
    data, names = report["data"], report["names"]
    feats, leaf = report["ex"]
    int64, floats = feats.mistakes[0], feats.mistakes[1]
    not_leaf, no_grad = leaf.mistakes[0], leaf.mistakes[1]
    ranked = [(m["exercise"].split("/")[1], m["kind"], m["count"]) for m in data["mistakes"]]
    # The transposed features get two automatic sentences: the statement added to the
    # reference's, and how the values differ.
    assert ranked == [
        ("features-and-labels", "authored", 7),
        ("leaf-parameter", "authored", 5),
        ("features-and-labels", "authored", 4),
        ("features-and-labels", "automatic", 3),  # a tie keeps the exercises' order
        ("features-and-labels", "automatic", 3),
        ("leaf-parameter", "automatic", 3),
        ("leaf-parameter", "authored", 2),
    ]
    top = data["mistakes"]
    assert [m["id"] for m in (top[0], top[1], top[2], top[6])] == [
        int64.stable_id,
        not_leaf.stable_id,
        floats.stable_id,
        no_grad.stable_id,
    ]
    assert top[0]["message"] == int64.message
    assert top[0]["learners"] == sorted(names[12:19])  # submissions are read in name order
    assert HOSTILE in top[0]["learners"]
    for automatic in (top[3], top[4]):
        assert automatic["learners"] == sorted(names[23:26]) and automatic["id"].startswith("auto:")
    assert top[5]["id"] == "auto:zero_grad" and top[5]["learners"] == sorted(names[21:24])
    assert top[0]["rate"] == pytest.approx(7 / 26)
    # the verdict JSON names each mistake by the same id, beside its message (cached verdicts too)
    verdict = report["verdicts"][HOSTILE][f"{LESSON}/features-and-labels"]
    assert (verdict["mistakes"], verdict["mistake_ids"], verdict["cached"]) == (
        [int64.message],
        [int64.stable_id],
        True,
    )
    assert report["rerun"] == data


@pytest.mark.slow
def test_time_and_attempts_from_progress_exports(report):
    a = _by_exercise(report["data"])[f"{LESSON}/features-and-labels"]
    effort = a["effort"]
    assert (effort["learners"], effort["attempts_median"], effort["attempts_max"]) == (3, 2, 3)
    assert effort["minutes_median"] == pytest.approx(15) and effort["minutes_max"] == pytest.approx(20)
    assert _by_exercise(report["data"])[f"{LESSON}/leaf-parameter"]["effort"] is None


@pytest.mark.slow
def test_markdown_and_html_hold_the_counts_and_escape_names(report):
    md, page = report["md"], report["html"]
    feats, _ = report["ex"]
    assert "| 1 | 7 | tensors/features-and-labels | authored |" in md
    assert "| tensors/features-and-labels | 12 | 26 | 40% |" in md
    assert "| features | 16 | 26 | 62% |" in md
    assert "median 2 attempts (at most 3), median 15 min" in md
    assert "median 2 attempts (at most 3), median 15 min" in page
    # the hostile name is listed, as text: no raw HTML, no emphasis, no link, no cell break
    assert "<script>" not in md and "<script>" not in page
    assert for_markdown(HOSTILE) in md and for_html(HOSTILE) in page
    assert "learner\\udcff" in page  # the lone surrogate shown as an escape
    assert for_html(feats.mistakes[0].message) in page
    assert re.search(r"<td[^>]*>7</td>", page) and "<svg" in page and "40%" in page
    # self-contained: nothing fetched, nothing run
    assert not re.search(r"(src|href)\s*=|https?:|<script|@import|url\(", page, re.I)


def test_a_diagnosis_is_known_by_its_sentence_with_numbers_masked():
    one = "x.grad is 2x the expected gradient, as if backward() ran 2 times"
    assert diagnosis_id(one) == diagnosis_id(one.replace("2", "3")) != diagnosis_id("another sentence")
    result = {"mistakes": ["a", "b", "a"], "mistake_ids": ["m-1", None, "m-9"]}
    assert ids_by_message(result) == {"a": "m-1", "b": diagnosis_id("b")}
    # a result of an older check library (no ids): every message still gets one
    assert ids_by_message({"mistakes": ["a"]}) == {"a": diagnosis_id("a")}


def test_an_authored_mistake_is_known_by_its_id_else_by_its_message():
    feats, _ = _exercises()
    first = feats.mistakes[0]
    assert first.stable_id.startswith("m-") and first.stable_id == type(first)(**first.model_dump()).stable_id
    named = type(first)(**(first.model_dump() | {"id": "int-features"}))
    assert named.stable_id == "int-features"


def test_a_mistake_id_given_twice_is_a_pack_error_at_its_line(tmp_path: Path):
    pack = new_pack(tmp_path / "demo")
    f = pack / "first-steps" / "lesson.yaml"
    text = f.read_text()
    first = '        message: "t is float32, the default: pass dtype=torch.float64."\n'
    assert first in text
    again = '      - failed_check: t-matches\n        message: "t is wrong."\n        id: float32\n'
    f.write_text(text.replace(first, first + "        id: float32\n" + again, 1))
    _, problems = check_pack(pack)
    assert len(problems) == 1, problems
    (p,) = problems
    assert p.field == "exercises[0].mistakes[1].id" and "mistake id 'float32' is used twice" in p.message
    assert p.line == [n for n, t in enumerate(f.read_text().splitlines(), 1) if "id: float32" in t][1]


@pytest.mark.slow
def test_a_report_folder_that_cannot_be_made_is_one_sentence(tmp_path: Path):
    (tmp_path / "subs" / "alice").mkdir(parents=True)
    (tmp_path / "taken").write_text("a file, not a folder\n")
    run = cli("grade", str(tmp_path / "subs"), "--lesson", LESSON, "--report", str(tmp_path / "taken"), home=tmp_path)
    assert run.returncode != 0 and "Traceback" not in run.stderr
    assert f"cannot write the class report in {tmp_path / 'taken'}: " in run.stderr
    assert (tmp_path / "taken").read_text() == "a file, not a folder\n"


@given(st.text())
def test_any_text_stays_text_in_html_and_markdown(text: str):
    page = for_html(text)
    assert not set("<>\"'") & set(page) and "\n" not in page
    assert html.unescape(page) == for_terminal(text, lines=False)
    md = for_markdown(text)
    assert "<" not in md and ">" not in md and "\n" not in md
    # every character that acts inside a Markdown line is escaped (a backslash before it)
    assert not re.search(r"(?<!\\)[`*_\[\]!|~]", md.replace("\\\\", "")), md
