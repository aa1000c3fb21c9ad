"""`pack test` proves lesson text like code: the values an intuition's Python blocks state
(``# -> VALUE``) and the keys of cards with a ``probe`` are what torch gives."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tutor.grading.intuition import matches, stated_values
from tutor.packs.codeblocks import blocks
from tutor.packs.loader import check_pack

PACK = 'id: tiny\ntitle: Tiny\nversion: "0.1.0"\nlessons: [rows]\n'
RIGHT = """\
# Rows

```python
x = torch.arange(6.0).reshape(2, 3)
x.sum(dim=0)                 # -> tensor([3., 5., 7.])  # one per column
x.view(-1, 4)                # -> raises RuntimeError
```

A later block continues the earlier ones:

```python
x.mean()                     # -> tensor(2.5000)
torch.tensor(4e-8).half()    # -> tensor(5.96e-08, dtype=torch.float16)
```

```python no-run
undefined_name               # shown, never run
```
"""
LESSON = """\
id: rows
title: Rows
intuition: intuition.md
cards:
  - id: sum-shape
    type: short
    prompt: Shape of `torch.ones(2, 3).sum(0)`?
    answers: ["torch.Size([3])"]
    probe: torch.ones(2, 3).sum(0).shape
  - id: half-tiny
    type: numeric
    prompt: "`torch.tensor(4e-8).half().item()`?"
    answer: 5.96e-8
    rel_tolerance: 0.001
    probe: torch.tensor(4e-8).half().item()
"""


def make_pack(root: Path, intuition: str = RIGHT, lesson: str = LESSON) -> Path:
    (root / "rows").mkdir(parents=True, exist_ok=True)
    (root / "pack.yaml").write_text(PACK)
    (root / "rows" / "lesson.yaml").write_text(lesson)
    (root / "rows" / "intuition.md").write_text(intuition)
    return root


def pack_test(pack: Path, home: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PTFUND_TUTOR_CACHE"}
    env["PTFUND_TUTOR_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "tutor", "pack", "test", str(pack), "--trust", "--mutants", "off"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=pack.parent,
    )


def test_blocks_are_found_with_their_lines_and_no_run_marks():
    found = blocks(RIGHT)
    assert [(b.number, b.line, b.runs) for b in found] == [(1, 4, True), (2, 12, True), (3, 17, False)]
    assert [b.number for b in blocks("```python\n# no-run\nx\n```\n")] == [1]
    assert not blocks("```python\n# no-run\nx\n```\n")[0].runs
    assert blocks("```text\nx\n```\n```py\ny\n```\n") == []  # only ```python blocks run


def test_stated_values_must_end_a_top_level_expression():
    stated, problem = stated_values("a = 1\na  # -> 1\nb = a  # -> 1\n")
    assert problem == (3, "a '# ->' value must end an expression at the block's top level")
    stated, problem = stated_values("x  # -> raises NameError  # why\n")
    assert problem is None and stated[1].raises == "NameError"
    problem = stated_values("x = (\n")[1]
    assert problem is not None and problem[0] == 1 and problem[1].startswith("the block is not valid Python")


def test_values_match_ignoring_spaces_with_ellipsis_and_a_float_tolerance():
    assert matches("tensor([ 6., 12.])", "tensor([6., 12.])")
    assert matches("tensor(5.96e-08, dtype=torch.float16)", "tensor(5.9605e-08, dtype=torch.float16)")
    assert matches("<AddBackward0 ...>", "<AddBackward0 object at 0x7f3a>")
    assert not matches("tensor(0., dtype=torch.float16)", "tensor(5.9605e-08, dtype=torch.float16)")
    assert not matches("torch.float32", "torch.float16")  # digits inside a name are text
    assert not matches("tensor(3.)", "tensor(3.1)")
    assert not matches("(3, 1)", "(3, 1, 1)")


def test_a_probe_that_does_not_parse_is_a_pack_problem(tmp_path: Path):
    pack = make_pack(tmp_path / "pk", lesson=LESSON.replace("probe: torch.ones(2, 3).sum(0).shape", "probe: 'x ='"))
    _, problems = check_pack(pack, cache=False)
    assert [(Path(p.file).name, p.line, p.field) for p in problems] == [("lesson.yaml", 9, "cards[0].probe")]
    assert "probe does not parse: not a Python expression" in problems[0].message


@pytest.mark.slow
def test_right_text_passes_and_no_run_blocks_are_skipped(tmp_path: Path):
    pack = make_pack(tmp_path / "pk")
    done = pack_test(pack, tmp_path / "home")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok   rows/intuition  block 1" in done.stdout
    assert "pk/rows/intuition.md:4: 2 stated values hold" in done.stdout
    assert "block 3" not in done.stdout  # the no-run block
    assert "4 passed, 0 failed (2 intuition blocks run, 1 marked no-run; 2 card probes)" in done.stdout


@pytest.mark.slow
def test_a_wrong_value_a_raising_block_and_a_wrong_key_fail_at_file_line(tmp_path: Path):
    wrong = RIGHT.replace("tensor(2.5000)", "tensor(2.)").replace("x.view(-1, 4)", "x.view(-1, 3)")
    wrong += "\n```python\ny = 1\nundefined_name + y\n```\n"
    lesson = LESSON.replace('answers: ["torch.Size([3])"]', 'answers: ["torch.Size([2])"]')
    pack = make_pack(tmp_path / "pk", wrong, lesson)
    done = pack_test(pack, tmp_path / "home")
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert "pk/rows/intuition.md:6: the text says it raises RuntimeError; it gives tensor(" in out
    assert "pk/rows/intuition.md:12: the text says tensor(2.); torch gives tensor(2.5000)" in out
    assert "pk/rows/intuition.md:22: raises NameError: name 'undefined_name' is not defined" in out
    assert "pk/rows/lesson.yaml:7: probe 'torch.ones(2, 3).sum(0).shape' gives 'torch.Size([3])'" in out
    assert "1 passed, 4 failed (3 intuition blocks run, 1 marked no-run; 2 card probes)" in out


@pytest.mark.slow
def test_json_counts_blocks_and_probes(tmp_path: Path):
    pack = make_pack(tmp_path / "pk")
    env = {k: v for k, v in os.environ.items() if k != "PTFUND_TUTOR_CACHE"}
    env["PTFUND_TUTOR_HOME"] = str(tmp_path / "home")
    done = subprocess.run(
        [sys.executable, "-m", "tutor", "pack", "test", str(pack), "--trust", "--mutants", "off", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    report = json.loads(done.stdout)
    assert (report["intuition_blocks"], report["intuition_blocks_skipped"], report["card_probes"]) == (2, 1, 2)
    assert [r["case"] for r in report["rows"]] == ["block 1", "block 2", "probe", "probe"]


def test_a_probe_does_not_change_the_card_for_learners():
    from tutor.packs import models as m
    from tutor.packs.catalog import content_hash

    plain = m.ShortCard(id="s", type="short", prompt="Shape?", answers=["torch.Size([3])"])
    probed = plain.model_copy(update={"probe": "torch.ones(2, 3).sum(0).shape"})
    assert content_hash(probed) == content_hash(plain)
    assert content_hash(plain.model_copy(update={"prompt": "Shape now?"})) != content_hash(plain)


def test_a_block_inside_a_list_item_runs_dedented():
    (block,) = blocks("- a point:\n\n  ```python\n  x = 1\n  x  # -> 1\n  ```\n")
    assert block.line == 4 and block.code == "x = 1\nx  # -> 1\n"


def test_a_pack_whose_only_python_is_a_probe_or_a_block_needs_trust(tmp_path: Path):
    from tutor.packs.trust import needs_trust

    only_text = "# Rows\n\n```python no-run\nimport os\n```\n"
    no_probe = LESSON.replace("    probe: torch.ones(2, 3).sum(0).shape\n", "").replace(
        "    probe: torch.tensor(4e-8).half().item()\n", ""
    )
    cases = [(only_text, no_probe, False), (RIGHT, no_probe, True), (only_text, LESSON, True)]
    for k, (intuition, lesson, needed) in enumerate(cases):
        pack, problems = check_pack(make_pack(tmp_path / f"pk{k}", intuition, lesson), cache=False)
        assert pack is not None and problems == [], problems
        assert needs_trust(pack) is needed, k
