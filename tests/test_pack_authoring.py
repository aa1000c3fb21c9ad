"""What an instructor porting outside material needs: source checks (applies_to), function
checks with dimension-tied ints, constrained inputs and an oracle from setup, accepted
solutions, a lesson prelude, and `pack validate` reporting everything in one round."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_checks_support import check, only, verify

from tutor.packs.loader import check_pack, load_pack
from tutor.packs.scaffold import new_pack

LOOP_SOLUTION = "def total(xs):\n    out = 0\n    for x in xs:\n        out = out + x\n    return out\n"


def test_source_check_forbids_requires_and_counts():
    rules = check(kind="source", forbid=["for", "torch.stack", "'cuda'"], require=["torch.where"], max_lines=2)
    code = "import torch\nfor i in range(2):\n    d = 'cuda'\n"
    msg = only(verify(code, "x = 1", [rules]))["message"]
    assert "your code uses for (line 2), which this exercise does not allow" in msg
    assert "your code uses 'cuda' (line 3)" in msg and "your code must use torch.where" in msg
    assert "your code has 3 lines, at most 2 allowed" in msg
    ok = verify("import torch\ny = torch.where(torch.ones(2) > 0, 1, 2)", "x = 1", [rules])
    assert ok["passed"]


def test_a_forbidden_name_is_seen_through_imports_and_text_that_reaches_it():
    # numpy-parity/grad-parity's "by hand" rule was passed with getattr(W_t, "gr" + "ad") and with
    # `from torch.autograd import grad`: neither wrote .grad or autograd.grad as such.
    rules = check(kind="source", forbid=[".grad", "autograd.grad"])
    for code, said in [
        ("from torch.autograd import grad\ng = grad(loss, [w])\n", "your code uses autograd.grad (line 3)"),
        ("from torch import autograd as ag\ng = ag.grad(loss, [w])\n", "your code uses"),
        ("import torch.autograd as A\ng = A.grad(loss, [w])\n", "your code uses"),
        ('g = getattr(w, "grad")\n', "your code uses .grad (line 2)"),
        ('g = getattr(w, "gr" + "ad")\n', "reaches an attribute or a name by text (getattr with a computed name"),
        ('g = eval("w.gr" + "ad")\n', "reaches an attribute or a name by text"),
        ('g = type(w).__dict__["grad"].__get__(w)\n', "reaches an attribute or a name by text"),
    ]:
        r = verify("import torch\n" + code, "x = 1", [rules])
        assert not r["passed"] and said in only(r)["message"], (code, only(r)["message"])
    # a getattr with a written name of something else, and the rule's own words elsewhere, are fine
    fine = 'import torch\nw = torch.ones(2)\nflag = getattr(w, "requires_grad")\ngradient = 2 * w\n'
    assert verify(fine, "x = 1", [rules])["passed"]
    # a forbidden literal made of literals is the literal
    device_rule = check(kind="source", forbid=["'cuda'"])
    for code in ('d = "cu" + "da"\n', "d = f\"cu{'da'}\"\n"):
        assert "your code uses 'cuda' (line 1)" in only(verify(code, "x = 1", [device_rule]))["message"], code
    # a required name counts through an import too
    needs = check(kind="source", require=["torch.where"])
    assert verify("import torch\nfrom torch import where\ny = where(torch.ones(2) > 0, 1, 2)\n", "x = 1", [needs])[
        "passed"
    ]


def test_a_forbidden_name_reached_by_members_or_by_torchs_low_level_operators_fails_the_rule():
    # reading-transformers/attention's rule against scaled_dot_product_attention was passed with
    # inspect.getmembers(F) and with torch.ops.aten._scaled_dot_product_attention_math: neither
    # names the function the rule forbids.
    rules = check(kind="source", forbid=["scaled_dot_product_attention"])
    for code, said in [
        (
            "import inspect\nfn = dict(inspect.getmembers(F))['scaled_' + 'dot_product_attention']\n",
            "reaches an attribute or a name by text",
        ),
        ("from inspect import getmembers\nfns = getmembers(F)\n", "reaches an attribute or a name by text"),
        # a name that holds the rule's words is said as that, before the operators it runs under
        (
            "out = torch.ops.aten._scaled_dot_product_attention_math(q, k, v)\n",
            "_scaled_dot_product_attention_math, a form of scaled_dot_product_attention",
        ),
        ("from torch.ops import aten\nout = aten._efficient_attention_forward(q, k, v)\n", "low-level names"),
        ("import torch._C as C\nout = C._nn.scaled_dot_product_attention\n", "scaled_dot_product_attention (line"),
        ("import torch._C as C\nout = C._nn.softmax\n", "low-level names"),
        # torch's private API is as low-level as its operators
        ("out = torch.nn.functional._in_projection_packed(q, k, v, w)\n", "low-level names"),
    ]:
        r = verify("import torch\nimport torch.nn.functional as F\n" + code, "x = 1", [rules])
        assert not r["passed"] and said in only(r)["message"], (code, only(r)["message"])
    # a rule on a construct or a literal does not care which operators run
    fine = check(kind="source", forbid=["for"])
    assert verify("import torch\ny = torch.ops.aten.add(torch.ones(1), 1)\n", "x = 1", [fine])["passed"]


def test_a_forbidden_name_used_by_another_path_or_in_a_longer_name_fails_the_rule():
    # train-eval/batchnorm-by-hand's rules were passed with the class by its module path and
    # with torch.native_batch_norm; cross-entropy-contract's with F.poisson_nll_loss;
    # numpy-parity's rule against torch.func with functorch, its old name.
    cases = [
        ("BatchNorm1d", "bn2 = torch.nn.modules.batchnorm.BatchNorm1d(3)\n", "BatchNorm1d"),
        (
            "batch_norm",
            "y = torch.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5)\n",
            "a form of batch_norm",
        ),
        ("nll_loss", "y = F.poisson_nll_loss(x, x)\n", "F.poisson_nll_loss, a form of nll_loss"),
        ("torch.func", "import functorch\ng = functorch.vjp\n", "torch.func"),
        ("numpy", "import sys\nn = sys.modules['num' + 'py']\n", "reaches an attribute or a name by text"),
    ]
    for rule, code, said in cases:
        r = verify(
            "import torch\nimport torch.nn.functional as F\nx = torch.ones(2, 3)\n" + code,
            "x = 1",
            [check(kind="source", forbid=[rule])],
        )
        assert not r["passed"] and said in only(r)["message"], (code, only(r)["message"])
    # one word is too common to be read inside other names: a rule against .grad leaves .grad_fn
    fine = check(kind="source", forbid=[".grad"])
    assert verify("import torch\nx = torch.ones(2, requires_grad=True)\nf = (x * 2).grad_fn\n", "x = 1", [fine])[
        "passed"
    ]


def test_source_check_applies_to_the_learner_only():
    one_liner = check(kind="source", forbid=["for"], max_statements=2, applies_to="learner")
    assert verify("def total(xs):\n    return sum(xs)\n", LOOP_SOLUTION, [one_liner])["passed"]
    assert not verify(LOOP_SOLUTION.replace("out = 0", "out = 0  # mine"), "y = 2", [one_liner])["passed"]
    # Code written exactly like the reference is still a learner's (pasted from the solution view):
    # only `pack test` proving the reference leaves these checks out (tutor/grading/packtest.py).
    pasted = verify(LOOP_SOLUTION, LOOP_SOLUTION, [one_liner])
    assert not pasted["passed"] and "your code uses for (line 3)" in only(pasted)["message"]


def test_pack_test_proves_the_reference_without_learner_only_rules(pack: Path):
    from tutor.grading.packtest import reference_exercise
    from tutor.packs import models as m

    edit(lesson_file(pack), "        compare: [shape, dtype, device, values]\n", SOURCE_RULE)
    ex = load_pack(pack).lessons[0].exercises[0]
    assert [c.kind for c in ex.checks] == ["tensor", "source"]
    assert [c.kind for c in reference_exercise(ex).checks] == ["tensor"]
    assert isinstance(ex.checks[1], m.SourceCheck)  # the exercise itself keeps the rule for learners


SOURCE_RULE = (
    "        compare: [shape, dtype, device, values]\n"
    "      - kind: source\n        forbid: [torch.zeros]\n        applies_to: learner\n"
)


def test_function_check_dimension_ints_constraints_and_an_oracle_from_setup():
    setup = "import torch\ndef _oracle(x, n):\n    return x.sort(dim=-1).values[..., :n]\n"
    spec = dict(
        kind="function",
        name="smallest",
        reference="_oracle",
        args=[
            {"type": "tensor", "shape": ["b", "k"], "dtypes": ["int64"], "unique": True, "transform": "x * 2"},
            {"type": "int", "dim": "k"},
        ],
        dims={"b": [1, 3], "k": [2, 5]},
        distinct_dims=True,
        devices=["cpu"],
    )
    good = "def smallest(x, n):\n    return torch.topk(x, n, largest=False).values\n"
    r = verify(good, "", [check(**spec)], setup=setup)  # the solution defines nothing: the oracle decides
    assert r["passed"], r
    wrong = "def smallest(x, n):\n    return x[..., :n]\n"
    assert not verify(wrong, "", [check(**spec)], setup=setup)["passed"]
    sorted_spec = dict(spec, args=[dict(spec["args"][0], sorted=True), spec["args"][1]])
    assert verify(wrong, "", [check(**sorted_spec)], setup=setup)["passed"]  # sorted input: the prefix is right


def test_distinct_dims_and_dim_ints_in_generated_cases():
    from tutor.checks.generate import generate_case

    args = [{"type": "tensor", "shape": ["n", "m"]}, {"type": "int", "dim": "m"}]
    for i in range(12):
        case = generate_case(args, {"n": [2, 4], "m": [2, 4]}, 0, i, "cpu", ["x", "m"], distinct=True)
        x, m = case.args
        assert x.shape[0] != x.shape[1] and m == x.shape[1]


@pytest.fixture
def pack(tmp_path: Path) -> Path:
    return new_pack(tmp_path / "demo")


def lesson_file(pack: Path) -> Path:
    return pack / "first-steps" / "lesson.yaml"


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def test_prelude_heads_every_setup_and_shares_the_namespace(pack: Path):
    edit(lesson_file(pack), "intuition: intuition.md\n", "intuition: intuition.md\nprelude: |\n  ROWS, COLS = 2, 3\n")
    edit(
        lesson_file(pack),
        "    solution: solution_zeros.py\n",
        "    setup: 'shape = (ROWS, COLS)'\n    solution: solution_zeros.py\n",
    )
    ex = load_pack(pack).lessons[0].exercises[0]
    assert ex.setup == "ROWS, COLS = 2, 3\n\nshape = (ROWS, COLS)"
    r = verify(
        "import torch\nt = torch.zeros(shape, dtype=torch.float64)",
        ex.solution,
        [check(kind="value", expr="(ROWS, COLS, tuple(t.shape))")],
        setup=ex.setup,
    )
    assert r["passed"], r


def test_a_hidden_prelude_runs_but_is_not_shown_with_the_setup(pack: Path):
    # prelude_visible: false for the checks' own machinery: the setup that runs still starts
    # with it, the setup a learner reads (show, the app, a work folder's file) does not.
    edit(
        lesson_file(pack),
        "intuition: intuition.md\n",
        "intuition: intuition.md\nprelude: |\n  _RECORD = []\nprelude_visible: false\n",
    )
    edit(
        lesson_file(pack),
        "    solution: solution_zeros.py\n",
        "    setup: 'shape = (2, 3)'\n    setup_visible: true\n    solution: solution_zeros.py\n",
    )
    ex = load_pack(pack).lessons[0].exercises[0]
    assert ex.setup == "_RECORD = []\n\nshape = (2, 3)"
    assert ex.shown_setup == "shape = (2, 3)"


def test_accepted_solutions_load_from_files_and_are_parsed(pack: Path):
    (pack / "first-steps" / "alt.py").write_text(
        "import torch\nt = torch.zeros((2, 3), dtype=torch.float64, device=DEVICE)\n"
    )
    edit(
        lesson_file(pack),
        "    wrong_solutions:\n",
        "    accepted_solutions:\n      - alt.py\n      - 't = ('\n    wrong_solutions:\n",
    )
    _, problems = check_pack(pack)
    assert [p.message for p in problems] == ["accepted solution does not parse: '(' was never closed"]


def test_validate_reports_schema_and_semantic_problems_in_one_round_and_says_quote_it(pack: Path):
    edit(lesson_file(pack), "        expr: t\n", "        expr: t\n        expected: [2, 3]\n")
    edit(
        lesson_file(pack),
        '      - when: "isinstance(t',
        '      - failed_check: nope\n        message: x\n      - when: "isinstance(t',
    )
    _, problems = check_pack(pack)
    messages = [p.message for p in problems]
    assert any('is a YAML list, not a Python expression: quote it, e.g. expected: "[2, 3]"' in m for m in messages)
    edit(lesson_file(pack), "        expected: [2, 3]\n", "        expected: 3\n")
    messages = [p.message for p in check_pack(pack)[1]]
    assert any("is a YAML number, not a Python expression: quote it" in m for m in messages), messages
    # a second exercise with a semantic problem is reported in the same round
    edit(
        lesson_file(pack),
        "\ncards:\n",
        "\n  - id: other\n    title: Other\n    prompt: p\n    solution: 'x = 1'\n    checks:\n"
        "      - kind: value\n        expr: 'x +'\n\ncards:\n",
    )
    messages = [p.message for p in check_pack(pack)[1]]
    assert any("quote it" in m for m in messages) and any("expr does not parse" in m for m in messages), messages


@pytest.mark.slow
def test_pack_test_proves_accepted_solutions(pack: Path):
    edit(
        lesson_file(pack),
        "    wrong_solutions:\n",
        "    accepted_solutions:\n      - |\n        import torch\n        t = torch.zeros(2, 3, dtype=torch.float64, device=DEVICE)\n"
        "      - |\n        import torch\n        t = torch.ones(2, 3, dtype=torch.float64, device=DEVICE)\n    wrong_solutions:\n",
    )
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "tutor",
            "--data-dir",
            str(pack.parent / "data"),
            "pack",
            "test",
            str(pack),
            "--lesson",
            "first-steps",
            "--trust",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 1
    assert re.search(r"ok +first-steps/zeros +accepted 1 ", out.stdout), out.stdout
    assert re.search(r"FAIL +first-steps/zeros +accepted 2 ", out.stdout), out.stdout


LESSON = ("--lesson", "first-steps", "--trust")


def test_pack_test_proves_a_cause_absent_with_expect_not(pack: Path):
    """expect_not: the feedback of a wrong solution must not carry a sentence meant for
    another bug; pack test fails the row that does."""
    edit(
        lesson_file(pack),
        '        expect: "pass dtype=torch.float64"\n',
        '        expect: "pass dtype=torch.float64"\n        expect_not: "is on cpu"\n'
        "      - code: |\n          import torch\n          t = torch.zeros(2, 3, device=DEVICE)\n"
        '        expect: "dtype"\n        expect_not: "pass dtype=torch.float64"\n',
    )
    out = subprocess.run(
        [sys.executable, "-m", "tutor", "--data-dir", str(pack.parent / "data"), "pack", "test", str(pack), *LESSON],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 1, out.stdout
    assert re.search(r"ok +first-steps/zeros +wrong 1 ", out.stdout), out.stdout
    assert re.search(
        r"FAIL +first-steps/zeros +wrong 2 .*says 'pass dtype=torch.float64', a cause this code does not have",
        out.stdout,
    ), out.stdout


@pytest.mark.slow
def test_learner_only_rule_holds_for_the_reference_text_but_pack_test_proves_it(pack: Path):
    edit(lesson_file(pack), "        compare: [shape, dtype, device, values]\n", SOURCE_RULE)
    data = str(pack.parent / "data")
    tested = subprocess.run(
        [sys.executable, "-m", "tutor", "--data-dir", data, "pack", "test", str(pack), "--trust"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert re.search(r"ok +first-steps/zeros +solution ", tested.stdout), tested.stdout + tested.stderr
    pasted = pack / "pasted.py"
    pasted.write_text((pack / "first-steps" / "solution_zeros.py").read_text())
    checked = subprocess.run(
        [
            sys.executable,
            "-m",
            "tutor",
            "--data-dir",
            data,
            "--pack",
            str(pack),
            "check",
            "first-steps/zeros",
            "--file",
            str(pasted),
            "--trust",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "your code uses torch.zeros (line 3), which this exercise does not allow" in checked.stdout


def test_validate_says_a_through_list_needs_a_write_rule(pack: Path):
    """`through` exempts views from a forbid rule NAME[]=; without such a rule it means
    nothing, and an author who wrote it expected it to: said at its line."""
    edit(
        lesson_file(pack),
        "    checks:\n",
        "    checks:\n      - kind: source\n        forbid: [for]\n        through: [t]\n",
    )
    problems = check_pack(pack)[1]
    assert [p.message for p in problems] == [
        "names views to write through, but no forbid rule is a write rule (NAME[]=)"
    ], problems
    assert problems[0].file.endswith("lesson.yaml") and problems[0].line > 1
    edit(lesson_file(pack), "forbid: [for]", 'forbid: [for, "t[]="]')
    assert not check_pack(pack)[1]
