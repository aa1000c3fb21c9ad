"""pack validate warns about an authored mistake that any failure of its exercise satisfies,
at the condition's FILE:LINE:COL, and stays quiet about one that names its own bug."""

import argparse
import json
from pathlib import Path

import pytest

from tutor.commands.pack import run_validate
from tutor.packs.scaffold import new_pack

# The scaffold's one exercise has one check (t compared with the reference's tensor) and
# one precise mistake (t is float32).
PRECISE = '      - when: "isinstance(t, torch.Tensor) and t.dtype == torch.float32"\n'


def _pack_with(tmp_path: Path, mistakes: str) -> Path:
    root = new_pack(tmp_path / "demo")
    lesson = next(root.glob("*/lesson.yaml"))
    text = lesson.read_text()
    assert PRECISE in text
    lesson.write_text(text.replace("    mistakes:\n", "    mistakes:\n" + mistakes, 1))
    return lesson


def _validate(root: Path, capsys) -> tuple[int, str]:
    code = run_validate(argparse.Namespace(dir=root, cache=False))
    return code, capsys.readouterr().out


def test_a_precise_mistake_draws_no_warning(tmp_path, capsys):
    lesson = _pack_with(tmp_path, "")
    code, out = _validate(lesson.parent.parent, capsys)
    assert code == 0 and "warning" not in out, out


@pytest.mark.parametrize(
    ("mistake", "column", "says"),
    [
        ('      - when: "True"\n', 15, "is always true"),
        ("      - failed_check: t-matches\n", 23, "the exercise's only check"),
        ('      - when: "not torch.equal(t, torch.zeros(2, 3))"\n', 15, None),
    ],
)
def test_a_mistake_any_failure_satisfies_is_warned_about_where_it_stands(tmp_path, capsys, mistake, column, says):
    lesson = _pack_with(tmp_path, mistake + '        message: "A message for every failure."\n')
    code, out = _validate(lesson.parent.parent, capsys)
    assert code == 0, out  # a warning, not a problem: the pack still loads
    line = lesson.read_text().splitlines().index(mistake.rstrip("\n")) + 1
    if says is None:  # a condition about values, not a restatement of the failure: quiet
        assert "warning" not in out, out
        return
    warnings = [w for w in out.splitlines() if w.startswith("warning: ")]
    assert len(warnings) == 1, out
    assert f"lesson.yaml:{line}:{column}: exercises[0].mistakes[0]." in warnings[0] and says in warnings[0], out


def _validate_edited(tmp_path, capsys, *edits: tuple) -> str:
    """The scaffold pack with each (old, new) applied once to its lesson, validated."""
    root = new_pack(tmp_path / "demo")
    lesson = next(root.glob("*/lesson.yaml"))
    text = lesson.read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    lesson.write_text(text)
    code, out = _validate(root, capsys)
    assert code == 0, out  # warnings only: the pack still loads
    return out


def test_restating_the_only_check_s_failure_is_warned_about(tmp_path, capsys):
    out = _validate_edited(
        tmp_path,
        capsys,
        # the one check becomes a value check with an authored expected value
        (
            "      - kind: tensor\n        id: t-matches\n        expr: t\n        compare: [shape, dtype, device, values]\n",
            '      - kind: value\n        id: t-matches\n        expr: "t.dtype == torch.float64"\n        expected: "True"\n',
        ),
        (PRECISE, '      - when: "not (t.dtype == torch.float64)"\n'),
    )
    assert "holds whenever check t-matches, the exercise's only check, fails" in out, out


def test_failed_check_on_a_check_comparing_several_properties_is_warned_about(tmp_path, capsys):
    out = _validate_edited(
        tmp_path,
        capsys,
        # a second check, so the first is not the only one: what it compares makes the failure broad
        (
            "        compare: [shape, dtype, device, values]\n",
            "        compare: [shape, dtype, device, values]\n      - kind: value\n        id: t-sum\n"
            "        expr: float(t.sum())\n",
        ),
        ("    mistakes:\n", '    mistakes:\n      - failed_check: t-matches\n        message: "t is float32."\n'),
    )
    assert "failed_check names t-matches, which compares shape, dtype, device and values" in out, out


def test_a_setup_helper_that_computes_the_expected_value_is_warned_about(tmp_path, capsys):
    # expected calls a helper the setup defines: the learner's kernel runs the setup too, so
    # the learner's code could call it for the answer. In judge_setup it is the judge's alone.
    setup = "import torch\n\n\ndef zeros_answer():\n    return torch.zeros(2, 3, dtype=torch.float64)\n"
    edits = (
        ("    solution: solution_zeros.py\n", f"    setup: {json.dumps(setup)}\n    solution: solution_zeros.py\n"),
        (
            "        compare: [shape, dtype, device, values]\n",
            "        expected: zeros_answer().to(DEVICE)\n        compare: [shape, dtype, device, values]\n",
        ),
    )
    out = _validate_edited(tmp_path, capsys, *edits)
    warnings = [w for w in out.splitlines() if "zeros_answer" in w]
    assert len(warnings) == 1 and "exercises[0].checks[0].expected: expected calls zeros_answer" in warnings[0], out
    assert "define it in the exercise's judge_setup" in warnings[0], out

    moved = (edits[0][0], f"    judge_setup: {json.dumps(setup)}\n    solution: solution_zeros.py\n"), edits[1]
    out = _validate_edited(tmp_path / "again", capsys, *moved)
    assert "zeros_answer" not in out, out
