"""`pack test` runs mutants of each reference solution: a survivor is a weak check, reported
at FILE:LINE with its diff, until a check kills it or the exercise declares it equivalent."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tutor.packs.loader import check_pack

PACK = 'id: tiny\ntitle: Tiny\nversion: "0.1.0"\nlessons: [rows]\n'
# The check compares only the shape: a sum where the mean belongs passes it.
LESSON = """\
id: rows
title: Rows
intuition: "# Rows\\n\\nA row mean."
exercises:
  - id: row-mean
    title: Row means
    prompt: Make `m`, the mean of each row of `x`.
    setup: |
      import torch
      x = torch.randn(4, 3)
    solution: |
      import torch
      m = x.mean(dim=1)
    checks:
      - kind: tensor
        expr: m
        compare: [shape]
"""


def make_pack(root: Path, lesson: str = LESSON) -> Path:
    (root / "rows").mkdir(parents=True, exist_ok=True)
    (root / "pack.yaml").write_text(PACK)
    (root / "rows" / "lesson.yaml").write_text(lesson)
    return root


def pack_test(pack: Path, home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PTFUND_TUTOR_CACHE"}
    env["PTFUND_TUTOR_HOME"] = str(home)  # the kill cache lives in home/cache
    return subprocess.run(
        [sys.executable, "-m", "tutor", "pack", "test", str(pack), "--trust", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=pack.parent,
    )


def test_equivalent_mutants_are_validated(tmp_path: Path):
    lesson = LESSON + "    equivalent_mutants:\n      - mutant: x.sum\n"
    _, problems = check_pack(make_pack(tmp_path / "p", lesson), cache=False)
    assert [(p.line, p.field, p.message) for p in problems] == [
        (19, "exercises[0].equivalent_mutants[0].reason", "required field 'reason' is missing")
    ]
    lesson = (
        LESSON + "    equivalent_mutants:\n      - {mutant: x.sum, reason: a}\n      - {mutant: x.sum, reason: b}\n"
    )
    _, problems = check_pack(make_pack(tmp_path / "q", lesson), cache=False)
    assert [p.message for p in problems] == ["mutant 'x.sum' is declared twice"]


@pytest.mark.slow
def test_a_surviving_mutant_is_a_weak_check_until_declared_equivalent(tmp_path: Path):
    pack = make_pack(tmp_path / "tiny")
    home = tmp_path / "home"
    r = pack_test(pack, home)
    assert r.returncode == 1, r.stdout + r.stderr
    # the solution is a block in lesson.yaml: its second line is the file's line 13
    where = "tiny/rows/lesson.yaml:13"
    assert re.search(
        rf"FAIL rows/row-mean +mutant .*{re.escape(where)}: weak check: mutant mean-sum-\w+ \(mean-sum\) passes",
        r.stdout,
    ), r.stdout
    assert "        -m = x.mean(dim=1)\n        +m = x.sum(dim=1)" in r.stdout
    assert re.search(r"FAIL rows/row-mean +mutants .*survived", r.stdout), r.stdout
    assert "Traceback" not in r.stderr

    report = json.loads(pack_test(pack, home, "--json").stdout)
    results = {x["operator"]: x for x in report["mutants"]["rows/row-mean"]}
    assert results["dim"]["outcome"] == "killed" and results["dim"]["cached"] is True  # proven in the first run
    survivors = [x for x in report["mutants"]["rows/row-mean"] if x["outcome"] == "survived"]
    assert {x["operator"] for x in survivors} == {"mean-sum", "literal"}

    # Declared (one by id, one by text of its diff), the survivors are no longer weak checks.
    literal = next(x["id"] for x in survivors if x["operator"] == "literal")
    declared = (
        "    equivalent_mutants:\n"
        "      - mutant: m = x.sum(dim=1)\n        reason: the check is about the shape only, on purpose\n"
        f"      - mutant: {literal}\n        reason: a typed-in value is fine here\n"
    )
    (pack / "rows" / "lesson.yaml").write_text(LESSON + declared)
    r = pack_test(pack, home, "--mutants", "all")
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"ok +rows/row-mean +mutants .*killed.*, 0 survived, 2 declared equivalent", r.stdout), r.stdout
    assert re.search(r"ok +rows/row-mean +mutant .*\(dim\) killed", r.stdout), r.stdout

    # A declaration that matches no mutant is stale: the run says so and fails.
    (pack / "rows" / "lesson.yaml").write_text(LESSON + declared + "      - {mutant: no-such-1234, reason: r}\n")
    r = pack_test(pack, home)
    assert r.returncode == 1 and "'no-such-1234' matches no mutant" in r.stdout, r.stdout


@pytest.mark.slow
def test_mutants_off_runs_none(tmp_path: Path):
    pack = make_pack(tmp_path / "tiny")
    r = pack_test(pack, tmp_path / "home", "--mutants", "off", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout)
    assert report["mutants"] == {} and not any(row["case"].startswith("mutant") for row in report["rows"])
    assert not (tmp_path / "home" / "cache" / "pack-test" / "mutants.json").exists()


HOOKED = """\
id: rows
title: Rows
intuition: "# Rows\\n\\nA hook sees every output."
exercises:
  - id: record
    title: Record the shapes
    prompt: Register a forward hook on `layer` that appends each output's shape to `shapes`, then run `layer(x)`.
    setup: |
      import torch
      layer = torch.nn.Linear(3, 5)
      x = torch.randn(4, 3)
      shapes = []
    solution: |
      def record(module, args, output):
          shapes.append(output.shape)
      layer.register_forward_hook(record)
      y = layer(x)
    checks:
      - kind: value
        expr: shapes
"""


@pytest.mark.slow
def test_a_typed_in_answer_the_second_world_cannot_tell_apart_is_a_weak_check(tmp_path: Path):
    # `shapes` is filled by a hook: no assignment for the literal operator to replace. Typed
    # in whole, [torch.Size([4, 5])] passes: the second world draws other numbers, same sizes.
    pack = make_pack(tmp_path / "tiny", HOOKED)
    report = json.loads(pack_test(pack, tmp_path / "home", "--json").stdout)
    results = report["mutants"]["rows/record"]
    survivors = [x for x in results if x["outcome"] == "survived"]
    assert [x["operator"] for x in survivors] == ["typed-in"], results
    assert "+shapes = [torch.Size([4, 5])]" in survivors[0]["diff"]
    # A variant with another batch size tells a typed-in answer from a hook.
    variant = HOOKED.replace("    checks:\n", "    variants:\n      - |\n        x = torch.randn(7, 3)\n    checks:\n")
    (pack / "rows" / "lesson.yaml").write_text(variant)
    r = pack_test(pack, tmp_path / "home", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    results = json.loads(r.stdout)["mutants"]["rows/record"]
    assert {x["operator"]: x["outcome"] for x in results}["typed-in"] == "killed", results
