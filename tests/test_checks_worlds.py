"""A pass must hold in a second world: setup again with another seed (or the exercise's
variant), the reference and the learner's code on that data, every check once more."""

import pytest
import torch
from test_checks_support import check, only, verify

from tutor.checks.namespaces import seed_all

pytestmark = pytest.mark.slow

SETUP = "import torch\nx = torch.randn(3, 4)\n"
SOLUTION = "y = x.t() * 2\n"
CHECK = check(kind="tensor", expr="y")
SECOND = [{"seed": 1, "variant": ""}]


def typed_in_answer() -> str:
    """The answer for the first world's data, written out as a literal."""
    seed_all(0)
    x = torch.randn(3, 4)
    return f"import torch\ny = torch.tensor({(x.t() * 2).tolist()})\n"


def test_a_typed_in_literal_passes_one_world_and_fails_the_second():
    literal = typed_in_answer()
    assert verify(literal, SOLUTION, [CHECK], setup=SETUP)["passed"]  # the hole a second world closes
    r = verify(literal, SOLUTION, [CHECK], setup=SETUP, worlds=SECOND)
    assert not r["passed"]
    assert only(r)["message"].startswith("On other data (setup run again with seed 1): ")
    assert only(r)["details"]["world"] == 2
    assert r["mistakes"][0].startswith("Your code is right for the exercise's data but not for other data")
    assert "it writes y as a literal (line 2), and a result typed in" in r["mistakes"][0]


def test_failing_on_other_data_says_typed_in_only_where_the_code_writes_a_literal():
    # A size written into the code fits the first data only, and nothing was typed in.
    variant = [{"seed": 1, "variant": "x = torch.randn(5, 4)"}]
    r = verify("y = x[:3].t() * 2\n", SOLUTION, [CHECK], setup=SETUP, worlds=variant)
    assert not r["passed"] and r["world"] == 2
    assert r["mistakes"][0].endswith(
        "what it does is right on the first data only; what differs on the other data is below."
    )
    assert "typed in" not in " ".join(r["mistakes"])
    # A hook that never ran, its list filled by hand: the literal is found in a call too.
    from tutor.checks.typedin import literal_line

    assert literal_line("import torch\nshapes.append(torch.Size([5, 3]))\n", ["shapes"]) == ("shapes", 2)
    assert literal_line("lr = 0.1\nw = w - lr * g\n", ["w", "lr"]) is None  # one number is a choice
    assert literal_line("y = torch.tensor([[1.0, 2.0]])\n", ["z.sum()"]) is None  # not a checked name
    assert literal_line("y = [" * 500 + "]" * 500, ["y"]) is None  # too deep to parse: no sentence


def test_the_right_code_passes_both_worlds():
    r = verify("y = 2 * x.t()\n", SOLUTION, [CHECK], setup=SETUP, worlds=SECOND)
    assert r["passed"], r


def test_a_variant_changes_sizes_where_a_seed_alone_would_not():
    fixed = "import torch\nx = torch.arange(12.0).reshape(3, 4)\n"  # no random draw: every seed agrees
    literal = "import torch\ny = torch.tensor(" + str((torch.arange(12.0).reshape(3, 4).t() * 2).tolist()) + ")\n"
    assert verify(literal, SOLUTION, [CHECK], setup=fixed, worlds=SECOND)["passed"]  # same data twice
    variant = [{"seed": 1, "variant": "x = torch.arange(20.0).reshape(4, 5) - 7"}]
    r = verify(literal, SOLUTION, [CHECK], setup=fixed, worlds=variant)
    assert not r["passed"]
    assert "the exercise's variant" in only(r)["message"]
    assert verify("y = x.T.mul(2)\n", SOLUTION, [CHECK], setup=fixed, worlds=variant)["passed"]


def test_function_checks_draw_other_inputs_in_the_second_world():
    ref = "import torch\ndef double(t):\n    return t * 2\n"
    spec = check(kind="function", name="double", args=[{"type": "tensor", "shape": [2]}], cases=2, devices=["default"])
    r = verify(ref, ref, [spec], worlds=SECOND)
    assert r["passed"], r
    assert only(r)["details"]["ran"] == 2


def test_the_single_kernel_path_holds_every_world_too():
    # An attached kernel (--kernel) and pack test's reference runs verify in one process.
    from tutor.checks.runner import run_verification

    payload = {"setup": SETUP, "code": typed_in_answer(), "solution": SOLUTION, "seed": 0, "checks": [CHECK]}
    assert run_verification(payload)["passed"]
    r = run_verification({**payload, "worlds": SECOND})
    assert not r["passed"] and r["world"] == 2
    assert r["checks"][0]["message"].startswith("On other data (setup run again with seed 1): ")


def test_a_second_world_with_the_same_data_is_reported_for_pack_test():
    fixed = "import torch\nx = torch.arange(12.0).reshape(3, 4)\n"
    same = verify(SOLUTION, SOLUTION, [CHECK], setup=fixed, worlds=SECOND)
    assert same["passed"] and same.get("worlds_alike") is True
    drawn = verify(SOLUTION, SOLUTION, [CHECK], setup=SETUP, worlds=SECOND)
    assert drawn["passed"] and not drawn.get("worlds_alike")
    variant = [{"seed": 1, "variant": "x = torch.arange(20.0).reshape(4, 5)"}]
    assert not verify(SOLUTION, SOLUTION, [CHECK], setup=fixed, worlds=variant).get("worlds_alike")


def test_a_source_rule_forbids_writing_into_an_element_of_a_name():
    # transpose-view: the same final state written through a instead of through t.
    setup = "import torch\na = torch.arange(6.0).reshape(2, 3)\n"
    rule = check(kind="source", forbid=["a[]="], through=["t"])
    assert only(verify("t = a.t()\nt[0, 1] = 99\n", "t = a.t()\nt[0, 1] = 99\n", [rule], setup=setup))["passed"]
    for code in ("t = a.t()\na[1, 0] = 99\n", "t = a.t()\na[1, 0] += 93\n"):
        res = only(verify(code, "t = a.t()\nt[0, 1] = 99\n", [rule], setup=setup))
        assert not res["passed"]
        assert res["message"].startswith("your code writes into an element of a (line 2)"), res["message"]


def test_an_item_write_called_by_its_method_name_is_a_write_into_that_tensor():
    # The dunder and operator forms of a[1, 0] = 99, and in-place methods reached through
    # the class: each writes into its first argument (or the object it is called on).
    setup = "import torch\na = torch.arange(6.0).reshape(2, 3)\n"
    rule = check(kind="source", forbid=["a[]="], through=["t"])
    solution = "t = a.t()\nt[0, 1] = 99\n"
    wrong = (
        "type(a).__setitem__(a, (1, 0), 99)",
        "torch.Tensor.__setitem__(a, (1, 0), 99)",
        "a.__class__.__setitem__(a, (1, 0), 99)",
        "a.__setitem__((1, 0), 99)",
        "torch.Tensor.fill_(a[1, 0], 99)",
        "import operator\noperator.setitem(a, (1, 0), 99)",
        "from operator import setitem\nsetitem(a, (1, 0), 99)",
        "a[1].__iadd__(torch.tensor([93.0, 0.0, 0.0]))",
    )
    for line in wrong:
        res = only(verify(f"t = a.t()\n{line}\n", solution, [rule], setup=setup))
        assert not res["passed"], line
        assert "writes into an element of a" in res["message"], (line, res["message"])
    for line in ("type(t).__setitem__(t, (0, 1), 99)", "t.__setitem__((0, 1), 99)", "torch.Tensor.fill_(t[0, 1], 99)"):
        assert only(verify(f"t = a.t()\n{line}\n", solution, [rule], setup=setup))["passed"], line


def test_a_write_into_a_view_made_from_a_name_in_the_same_expression_is_a_write_into_it():
    """A new view of a (a.t(), a.view(-1), a[1]) written into, or an in-place method on it,
    writes into a's elements; a write into t (the view the rule goes through) or into a's .grad does not."""
    setup = "import torch\na = torch.arange(6.0).reshape(2, 3)\n"
    rule = check(kind="source", forbid=["a[]="], through=["t"])
    solution = "t = a.t()\nt[0, 1] = 99\n"
    wrong = (
        "a.t()[0, 1] = 99",
        "a.transpose(0, 1)[0, 1] = 99",
        "a[1][0] = 99",
        "a.view(-1)[3] = 99",
        "a[1, 0].fill_(99)",
        "a.data[1, 0] = 99",
    )
    for line in wrong:
        res = only(verify(f"t = a.t()\n{line}\n", solution, [rule], setup=setup))
        assert not res["passed"] and "writes into an element of a (line" in res["message"], (line, res["message"])
    for code in (
        solution,
        "t = a.t()\nt[0, 1].fill_(99)\n",
        "t = a.t()\nt.t()[1, 0] = 99\na.requires_grad_()\n",
        "t = a.t()\nt[0, 1] = 99\na.T.contiguous()[0, 1] = 5\n",
    ):  # a copy's element: not a's
        assert only(verify(code, solution, [rule], setup=setup))["passed"], code


def test_a_write_through_another_name_bound_to_a_view_is_a_write_into_the_tensor():
    """u = a.T; u[0, 1] = 99 writes a's elements as surely as a.T[0, 1] = 99 does: names bound to
    views are followed in source order, through chains and loops; only the check's `through`
    names (the view the exercise asks to write through) and names rebound to copies are not."""
    setup = "import torch\na = torch.arange(6.0).reshape(2, 3)\n"
    solution = "t = a.t()\nt[0, 1] = 99\n"
    rule = check(kind="source", forbid=["a[]="], through=["t"])
    wrong = {
        "t = a.t()\nu = a.T\nu[0, 1] = 99\n": "line 3, through u, a view of a",
        "t = a.t()\nu = a\nu[1, 0] = 99\n": "line 3, through u, another name for a",
        "t = a.t()\nu, v = a\nv[0] = 99\n": "line 3, through v, a view of a",
        "t = a.t()\nv = a.view(-1)\nw = v[3:]\nw.fill_(99)\nw.zero_()\n": "line 4, through w, a view of a",
        "t = a.t()\nfor row in a:\n    row[0] = 99\n": "line 3, through row, a view of a",
        "t = a.t()\nr0, r1 = a.unbind()\nr1[0] = 99\n": "line 3, through r1, a view of a",
        "t = a.t()\nrows = [r for r in a]\nrows[1][0] = 99\n": "line 3, through rows, a view of a",
        # torch's function form of a view method: torch.as_strided(a, ...) is a view of a
        "t = a.t()\ncell = torch.as_strided(a, (1,), (1,), 1)\ncell.fill_(99)\n": "line 3, through cell, a view of a",
        "t = a.t()\ntorch.transpose(a, 0, 1)[0, 1] = 99\n": "line 2",
        # torch's function form of an in-place method, and an out= argument, write too
        "t = a.t()\ntorch.fill_(a[1, 0], 99.0)\n": "line 2",
        "t = a.t()\ntorch.add(a[0], 1, out=a[1])\n": "line 2",
    }
    for code, where in wrong.items():
        res = only(verify(code, solution, [rule], setup=setup))
        assert not res["passed"], code
        assert f"writes into an element of a ({where})" in res["message"], (code, res["message"])
    for code in (
        solution,
        "t = a.t()\nu = t\nu[0, 1] = 99\n",  # another name for t: still through t
        "t = a.t()\nu = a.T.clone()\nu[0, 1] = 5\nt[0, 1] = 99\n",  # a copy
        "t = a.t()\nu = a.T\nu = u.contiguous()\nu[0, 1] = 5\nt[0, 1] = 99\n",  # rebound to a copy
    ):
        assert only(verify(code, solution, [rule], setup=setup))["passed"], code
    # Without `through`, a view kept in a name is a view of a like any other.
    res = only(verify(solution, solution, [check(kind="source", forbid=["a[]="])], setup=setup))
    assert not res["passed"] and "through t, a view of a" in res["message"], res["message"]


def test_a_variant_that_breaks_the_setup_says_which_world():
    variant = [{"seed": 1, "variant": "x = undefined_name"}]
    r = verify(SOLUTION, SOLUTION, [CHECK], setup=SETUP, worlds=variant)
    assert not r["passed"] and r["error"]["stage"] == "setup"
    assert r["error"]["evalue"].endswith("(in its world 2 (setup again with seed 1, then its variant))")


def test_variants_may_live_in_files_beside_the_lesson(tmp_path):
    from tutor.packs.loader import check_pack

    (tmp_path / "pack.yaml").write_text("id: p\ntitle: P\nversion: '1'\nlessons: [l]\n")
    (tmp_path / "l").mkdir()
    (tmp_path / "l" / "bigger.py").write_text("x = torch.randn(5, 2)\n")
    (tmp_path / "l" / "broken.py").write_text("x = (\n")
    lesson = (
        "id: l\ntitle: L\nsummary: s\nintuition: i\nexercises:\n  - id: e\n    title: E\n    prompt: p\n"
        '    setup: "import torch\\nx = torch.ones(2)"\n    solution: y = x * 2\n'
        "    checks: [{kind: tensor, expr: y}]\n    variants: [bigger.py]\n"
    )
    (tmp_path / "l" / "lesson.yaml").write_text(lesson)
    pack, problems = check_pack(tmp_path, cache=False)
    assert not problems, problems
    assert pack is not None and pack.lessons[0].exercises[0].variants == ["x = torch.randn(5, 2)\n"]
    (tmp_path / "l" / "lesson.yaml").write_text(lesson.replace("[bigger.py]", "[bigger.py, broken.py]"))
    _, problems = check_pack(tmp_path, cache=False)
    assert problems and "variant" in problems[0].message and "broken.py" in problems[0].file, problems
