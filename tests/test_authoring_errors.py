"""A check that names something no namespace defines is the exercise's fault: `pack validate`
finds it statically (FILE:LINE:COL, no pack code run) and `check` says so with exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_checks_support import check, verify

from tutor.grading.verify import verdict_from_result
from tutor.packs.scaffold import new_pack


def cli(*args: str, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PTFUND_TUTOR_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "tutor", *args], capture_output=True, text=True, env=env, timeout=300)


def lesson_yaml(pack: Path) -> Path:
    return next(pack.glob("*/lesson.yaml"))


def broken_pack(tmp_path: Path, expr: str) -> Path:
    pack = new_pack(tmp_path / "demo")
    f = lesson_yaml(pack)
    f.write_text(f.read_text().replace("        expr: t\n", f"        expr: {expr}\n", 1))
    return pack


def test_check_naming_an_undefined_name_is_an_authoring_error_not_the_learners():
    c = check(kind="tensor", expr="t + offset", compare=["shape", "values"])
    result = verify("t = torch.zeros(2)", "t = torch.zeros(2)", [c])
    verdict = verdict_from_result(result)
    assert verdict.status == "authoring-error", verdict.feedback()
    assert "This exercise is broken" in verdict.headline and "offset" in verdict.headline
    assert "you did not define" not in verdict.feedback()
    # a name the learner was asked to define and did not is still the learner's
    learner = verdict_from_result(verify("u = 1", "t = torch.zeros(2)", [check(kind="tensor", expr="t")]))
    assert learner.status == "fail" and "you did not define t" in learner.feedback()


def validate_broken(tmp_path, expr: str, at: str) -> tuple[str, str]:
    """`pack validate` of a pack whose first check reads ``expr``: its output, and the
    FILE:LINE:COL prefix a problem at ``at`` (a part of ``expr``) is reported under."""
    pack = broken_pack(tmp_path, expr)
    r = cli("pack", "validate", str(pack), "--no-cache", home=tmp_path / "home")
    assert r.returncode == 1, r.stdout
    lines = lesson_yaml(pack).read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if f"expr: {expr}" in text)
    col = lines[line - 1].index(at, lines[line - 1].index("expr: ")) + 1
    return r.stdout, f"lesson.yaml:{line}:{col}: exercises[0].checks[0].expr: "


def test_pack_validate_reports_unknown_names_at_file_line_col(tmp_path):
    out, at = validate_broken(tmp_path, "t + offset", "offset")
    assert f"{at}offset is defined neither" in out, out


def test_pack_validate_warns_about_compare_without_shape(tmp_path):
    pack = new_pack(tmp_path / "demo")
    f = lesson_yaml(pack)
    f.write_text(f.read_text().replace("compare: [shape, dtype, device, values]", "compare: [dtype, values]"))
    r = cli("pack", "validate", str(pack), "--no-cache", home=tmp_path / "home")
    assert r.returncode == 0, r.stdout
    assert "warning: first-steps/zeros: t-matches: compare lists values but not shape" in r.stdout


@pytest.mark.slow
def test_check_exits_2_for_a_broken_exercise(tmp_path):
    pack = broken_pack(tmp_path, "t + offset")
    # Static resolution over-approximates (a name bound inside a function counts), so this
    # pack loads; the runtime verdict must still blame the exercise.
    solution = next(pack.glob("*/solution_zeros.py"))
    solution.write_text(solution.read_text() + "\n\ndef _helper():\n    offset = 1\n    return offset\n")
    answer = tmp_path / "answer.py"
    answer.write_text("import torch\nt = torch.zeros(2, 3, dtype=torch.float64, device=DEVICE)\n")
    r = cli("--pack", str(pack), "check", "demo:first-steps/zeros", "--file", str(answer), "--trust", home=tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "This exercise is broken" in r.stdout and "offset" in r.stdout, r.stdout
