"""What porting an outside test suite needs from function checks: structured inputs
(shapes, indices within a shape, permutations, broadcastable shapes, dtypes), properties
without a reference, output arguments, a time budget, no meta run without tensors,
strict types, labels and no `_` names on failing lines, and YAML's own syntax in an
expression said as "quote it"."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from test_checks_support import check, only, verify

from tutor.checks.generate import generate_case
from tutor.packs.loader import check_pack
from tutor.packs.scaffold import new_pack

# Every test here verifies in a real kernel (or runs the judge as one does).
pytestmark = pytest.mark.slow


def test_broadcastable_shape_pairs_find_a_broadcast_that_ignores_ones():
    ref = "import torch\ndef shape_broadcast(a, b):\n    return tuple(torch.broadcast_shapes(a, b))\n"
    naive = "def shape_broadcast(a, b):\n    return tuple(max(x, y) for x, y in zip(a, b))\n"  # no alignment
    c = check(
        kind="function",
        name="shape_broadcast",
        args=[{"type": "shape", "ndim": [1, 3]}, {"type": "shape", "broadcasts_with": "a"}],
        cases=40,
    )
    assert verify(ref, ref, [c])["passed"]
    r = only(verify(naive, ref, [c]))
    assert not r["passed"] and r["message"].startswith("shape_broadcast fails for a = (")
    assert ", b = (" in r["message"] and "on cpu" in r["message"]


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31), index=st.integers(0, 40), ndim=st.integers(0, 4))
def test_structured_inputs_keep_their_promises(seed: int, index: int, ndim: int):
    specs = [
        {"type": "shape", "ndim": [ndim, ndim + 1]},
        {"type": "shape", "broadcasts_with": "a"},
        {"type": "tensor", "broadcasts_with": "a"},
        {"type": "permutation", "of": "a"},
        {"type": "dtype", "dtypes": ["int8", "float64"]},
    ]
    names = ["a", "b", "t", "order", "kind"]
    case = generate_case(specs, {}, seed, index, "cpu", names)
    a, b, t, order, kind = case.args
    assert len(a) in (ndim, ndim + 1) and all(1 <= s <= 4 for s in a)
    torch.broadcast_shapes(a, b)  # raises unless they broadcast
    torch.broadcast_shapes(a, t.shape)
    assert b != a and t.shape != torch.Size(a)
    assert sorted(order) == list(range(len(a)))
    assert kind in (torch.int8, torch.float64)
    if all(s >= 1 for s in a):
        at = generate_case([*specs[:1], {"type": "index", "of": "a"}], {}, seed, index, "cpu", ["a", "i"]).args[1]
        assert len(at) == len(a) and all(0 <= i < s for i, s in zip(at, a, strict=True))
    assert generate_case(specs, {}, seed, index, "cpu", names).describe() == case.describe()  # deterministic


def test_indices_within_a_shape_and_permutations_of_its_dimensions():
    ref = (
        "def to_position(index, shape):\n"
        "    pos, step = 0, 1\n"
        "    for i, s in reversed(list(zip(index, shape))):\n"
        "        pos, step = pos + i * step, step * s\n"
        "    return pos\n"
    )
    column_major = ref.replace("reversed(list(zip(index, shape)))", "zip(index, shape)")
    c = check(
        kind="function",
        name="to_position",
        args=[{"type": "index", "of": "shape"}, {"type": "shape", "ndim": [2, 3], "min": 2}],
        cases=20,
    )
    # an index refers to an earlier argument only
    r = only(verify(ref, ref, [c]))
    assert not r["passed"] and "'shape' is not an earlier argument" in r["message"]
    c = check(
        kind="function",
        name="to_position",
        args=[
            {"type": "shape", "name": "shape", "ndim": [2, 3], "min": 2},
            {"type": "index", "of": "shape", "name": "index"},
        ],
        cases=20,
    )
    flipped = lambda src: src.replace("(index, shape)", "(shape, index)", 1)  # noqa: E731
    assert verify(flipped(ref), flipped(ref), [c])["passed"]
    r = only(verify(flipped(column_major), flipped(ref), [c]))
    assert r["message"].startswith("to_position fails for shape = (2, 2), index = (")
    assert "result is" in r["message"]

    perm_ref = "import torch\ndef permuted(x, order):\n    return x.permute(*order)\n"
    transposed = "import torch\ndef permuted(x, order):\n    return x.permute(*order[::-1])\n"
    p = check(
        kind="function",
        name="permuted",
        args=[{"type": "tensor", "shape": ["a", "b", "c"]}, {"type": "permutation", "of": "x"}],
        dims={"a": [1, 3], "b": [1, 3], "c": [1, 3]},
        distinct_dims=True,
        devices=["default"],
    )
    assert verify(perm_ref, perm_ref, [p])["passed"]
    msg = only(verify(transposed, perm_ref, [p]))["message"]
    assert "order = (0, 1, 2)" in msg, msg  # the identity is case 0 and the smallest failing case


def test_dtype_arguments_and_no_meta_run_for_a_function_given_no_tensors():
    ref = "import torch\ndef ones_of(n, dtype):\n    return torch.ones(n, dtype=dtype)\n"
    c = check(
        kind="function",
        name="ones_of",
        args=[{"type": "int", "min": 1, "max": 4}, {"type": "dtype", "dtypes": ["float32", "int64", "bool"]}],
        cases=12,
    )
    r = only(verify(ref, ref, [c]))
    # the default devices are [default, meta]; with no tensor argument only the first runs
    assert r["message"] == "✓ ones_of matches the reference on 12 generated cases (cpu)", r
    wrong = "import torch\ndef ones_of(n, dtype):\n    return torch.ones(n)\n"
    msg = only(verify(wrong, ref, [c]))["message"]
    assert "dtype = torch.bool" in msg and "result has dtype torch.float32, expected torch.bool" in msg, msg


def test_a_property_needs_no_reference_and_shows_its_sub_values():
    solution = "import torch\ndef normalise(x):\n    return x / x.sum(-1, keepdim=True)\n"
    c = check(
        kind="function",
        name="normalise",
        args=[{"type": "tensor", "name": "x", "shape": ["n", "m"], "min": 0.5, "max": 2.0}],
        dims={"n": [1, 3], "m": [2, 4]},
        property="torch.allclose(result.sum(-1), torch.ones(x.shape[0]))",
        cases=10,
    )
    # the solution need not define it: the property is the whole check
    r = only(verify(solution, "", [c]))
    assert r["passed"] and r["message"] == "✓ normalise satisfies the property on 20 generated cases (cpu and meta)"
    wrong = "import torch\ndef normalise(x):\n    return x / x.sum()\n"
    msg = only(verify(wrong, "", [c]))["message"]
    assert msg.startswith(
        "normalise fails for x of shape (2, 2) float32 on cpu: "
        "torch.allclose(result.sum(-1), torch.ones(x.shape[0])) failed: result.sum(-1) is tensor(["
    ), msg
    assert "torch.ones(x.shape[0]) is tensor([1., 1.]); result is tensor([[" in msg and "; x is tensor([[" in msg
    # a property may call setup's helpers; feedback never shows their `_` names
    helper = check(**{**c, "property": "_sums_to_one(result)"})
    setup = "import torch\ndef _sums_to_one(t):\n    return torch.allclose(t.sum(-1), torch.ones(t.shape[0]))\n"
    assert verify(solution, "", [helper], setup=setup)["passed"]
    msg = only(verify(wrong, "", [helper], setup=setup))["message"]
    assert "_sums_to_one" not in msg and "the check's property failed: result is tensor([[" in msg, msg
    # without a reference the property cannot lean on the reference's parameter names
    with pytest.raises(ValidationError, match="names every argument"):
        check(kind="function", name="f", args=[{"type": "int"}], property="result > 0")
    # a reference that breaks the property is the exercise's fault
    bad_ref = check(**{**c, "reference": "_half"})
    r = only(verify(solution, "", [bad_ref], setup="import torch\ndef _half(x):\n    return x / 2\n"))
    assert r["details"].get("authoring_error") and "does not satisfy the property" in r["message"]


def test_an_output_argument_is_compared_after_the_call_and_a_property_reads_it():
    ref = "import torch\ndef column_sums(x, out):\n    out.copy_(x.sum(0))\n"
    doubled = "import torch\ndef column_sums(x, out):\n    out.copy_(x.sum(0) * 2)\n"
    args = [
        {"type": "tensor", "name": "x", "shape": ["n", "m"]},
        {"type": "tensor", "name": "out", "shape": ["m"], "transform": "x * 0"},
    ]
    c = check(kind="function", name="column_sums", args=args, dims={"n": [1, 3], "m": [1, 3]}, mutates=["out"])
    assert verify(ref, ref, [c])["passed"]
    msg = only(verify(doubled, ref, [c]))["message"]
    assert "out after the call[0] is " in msg and ", expected " in msg, msg
    p = check(**{**c, "property": "torch.allclose(out, x.sum(0))", "mutates": ["out"]})
    assert verify(ref, "", [p])["passed"]
    msg = only(verify(doubled, "", [p]))["message"]
    assert "torch.allclose(out, x.sum(0)) failed: out is tensor(" in msg, msg


def test_a_time_budget_bounds_the_cases_instead_of_a_cap():
    ref = "import torch\ndef double(x):\n    return x * 2\n"
    c = check(
        kind="function",
        name="double",
        args=[{"type": "tensor", "shape": ["n"]}],
        dims={"n": [1, 3]},
        cases=100_000,
        time_budget=0.5,
        devices=["default"],
    )
    r = only(verify(ref, ref, [c]))
    assert r["passed"] and r["details"]["time_budget_reached"] is True
    assert 2 <= r["details"]["ran"] < 100_000
    with pytest.raises(ValidationError):
        check(**{**c, "cases": 100_001})
    # a slow learner's function cannot cut the first batch short: its 50 cases all run
    slow = "import time, torch\ndef double(x):\n    time.sleep(0.04)\n    return x * 2\n"
    r = only(verify(slow, ref, [check(**{**c, "time_budget": 1.0})]))
    assert r["passed"] and r["details"]["ran"] == 50 and r["details"]["time_budget_reached"] is True, r


def test_strict_types_tell_a_list_from_a_tuple_and_a_tensor():
    ref = "def pair(n):\n    return (n, n + 1)\n"
    listed = "def pair(n):\n    return [n, n + 1]\n"
    c = check(kind="function", name="pair", args=[{"type": "int"}], cases=3)
    assert verify(listed, ref, [c])["passed"]  # equal values of list and tuple match by default
    msg = only(verify(listed, ref, [check(**{**c, "strict_types": True})]))["message"]
    assert "result is a list, expected a tuple (the exact type is checked)" in msg, msg
    v = check(kind="value", expr="t", expected="torch.tensor([1, 2])")
    assert verify("t = [1, 2]", "", [v])["passed"]
    msg = only(verify("t = [1, 2]", "", [check(**{**v, "strict_types": True})]))["message"]
    assert msg.startswith("t is a list, expected a tensor (the exact type is checked)"), msg
    tensor_ref = "import torch\ndef pair(n):\n    return torch.tensor([n, n + 1])\n"
    msg = only(verify(listed, tensor_ref, [check(**{**c, "strict_types": True})]))["message"]
    assert msg.count("expected a tensor") == 1, msg  # said once, not again by the lenient comparison


# A setup helper that runs the learner's class: the check names the helper, feedback must not.
FACTS_SETUP = "import torch\ndef _module_facts(size_a):\n    return Net(size_a).width\n"
NET = "class Net:\n    def __init__(self, n):\n        self.width = n * 2\n"
FACTS = {"kind": "function", "name": "_module_facts", "args": [{"type": "int", "min": 1, "max": 5}], "cases": 5}


def test_a_setup_helpers_name_is_never_shown():
    msg = only(verify(NET.replace("n * 2", "n + 2"), NET, [check(**FACTS)], setup=FACTS_SETUP))["message"]
    assert "_module_facts" not in msg and msg.startswith("your code fails for size_a = 1 on cpu"), msg


def test_a_function_checks_label_leads_its_failing_line():
    labelled = check(**FACTS, label="Net's width")
    msg = only(verify(NET.replace("n * 2", "n + 2"), NET, [labelled], setup=FACTS_SETUP))["message"]
    assert msg.startswith("Net's width fails for size_a = 1 on cpu"), msg
    ok = only(verify(NET, NET, [labelled], setup=FACTS_SETUP))["message"]
    assert ok.startswith("✓ Net's width matches the reference")


def test_a_python_checks_label_leads_its_failing_line():
    py = check(kind="python", code="assert t == 2", label="t is two")
    assert only(verify("t = 2", "", [py]))["message"] == "✓ t is two passed"
    assert only(verify("t = 3", "", [py]))["message"] == "t is two: t == 2 failed: t is 3"
    boom = check(kind="python", code="import math\nmath.sqrt(t)", label="t's root")
    assert only(verify("t = -3", "", [boom]))["message"].startswith("t's root raised ValueError")


def test_python_check_shows_the_first_failing_item_of_all_not_a_generator_repr():
    gen = check(kind="python", code="assert all(v > 0 for v in xs)")
    msg = only(verify("xs = [3, -1, 2]", "", [gen]))["message"]
    assert "generator" not in msg and "0x" not in msg, msg
    assert msg == "all(v > 0 for v in xs) failed: the first item that fails has v = -1; xs is [3, -1, 2]", msg
    pairs = check(kind="python", code="assert all(a < b for a, b in zip(xs, ys))")
    msg = only(verify("xs = [1, 5]\nys = [2, 3]", "", [pairs]))["message"]
    assert "the first item that fails has a = 5, b = 3; xs is [1, 5]; ys is [2, 3]" in msg, msg


def test_python_check_assert_false_with_a_message_says_only_the_message():
    plain = check(kind="python", code="assert False, 'xs must be sorted'")
    assert only(verify("xs = 1", "", [plain]))["message"] == "xs must be sorted"


def test_python_check_shows_the_sub_values_of_and_in_short_circuit_order_and_no_addresses():
    both = check(kind="python", code="assert t is not None and t.sum() == 3")
    msg = only(verify("t = torch.ones(2)", "", [both]))["message"]
    assert msg == "t is not None and t.sum() == 3 failed: t is tensor([1., 1.]); t.sum() is tensor(2.)", msg
    assert only(verify("t = None", "", [both]))["message"] == "t is not None and t.sum() == 3 failed: t is None"
    obj = check(kind="python", code="assert f is None")
    assert "0x" not in only(verify("f = object()", "", [obj]))["message"]


def _pack(tmp_path: Path) -> Path:
    root = tmp_path / "p"
    new_pack(root)
    return root


def _lesson(root: Path) -> Path:
    return next(root.rglob("lesson.yaml"))


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("lambda x: x", 'quote it, e.g. expr: "lambda x: x"'),
        ("x: 1", 'quote it, e.g. expr: "x: 1"'),
        ("*args", 'quote it, e.g. expr: "*args"'),
        ("*args + 1", 'quote it, e.g. expr: "*args + 1"'),
        ("&t", "which YAML reads as an anchor"),
        ("!t", "which YAML reads as a tag"),
    ],
)
def test_every_yaml_reading_of_an_expression_says_quote_it_at_file_line_col(tmp_path: Path, value: str, says: str):
    root = _pack(tmp_path)
    f = _lesson(root)
    text = f.read_text()
    assert "        expr: t\n" in text
    f.write_text(text.replace("        expr: t\n", f"        expr: {value}\n"))
    line = f.read_text().splitlines().index(f"        expr: {value}") + 1
    _, problems = check_pack(root)
    found = [p for p in problems if says in p.message]
    assert found, [str(p) for p in problems]
    assert found[0].line == line and found[0].col > 1 and "quote it" in found[0].message
    assert len([p for p in problems if p.line == line]) == 1, [str(p) for p in problems]  # said once
    assert str(found[0]).startswith(f"{found[0].file}:{line}:{found[0].col}: ")


def test_a_failing_case_shows_its_small_tensor_inputs_as_they_were_before_the_call():
    ref = "import torch\ndef total(x):\n    return x.sum(0)\n"
    code = "import torch\ndef total(x):\n    s = x.sum(0) + 1\n    x.zero_()\n    return s\n"
    c = check(kind="function", name="total", args=[{"type": "tensor", "shape": ["n", 2]}], dims={"n": [1, 8]})
    msg = only(verify(code, ref, [c]))["message"]
    assert "; where x is tensor([[" in msg and "tensor([[0., 0.]])" not in msg, msg  # not the zeroed copy
    big = check(**{**c, "dims": {"n": [7, 8]}})  # 14 elements and more: their shape says enough
    assert "where x is" not in only(verify(code, ref, [big]))["message"]


PORTED_PACK = """\
id: porting
title: Porting
version: "1.0.0"
authors: [A. Teacher]
description: Ported tests.
torch: ">=2.2"
lessons: [strides]
"""

PORTED_LESSON = """\
id: strides
title: Strides
summary: Positions from indices.
intuition: |
  ## Strides
  A stride says how far to step.
exercises:
  - id: position
    title: Index to position
    prompt: Write `to_position(shape, index)`, the row-major position of `index` in `shape`.
    starter: |
      def to_position(shape, index):
          ...
    solution: |
      def to_position(shape, index):
          pos, step = 0, 1
          for s, i in reversed(list(zip(shape, index))):
              pos, step = pos + i * step, step * s
          return pos
    checks:
      - kind: function
        id: in-range
        name: to_position
        args:
          - {type: shape, name: shape, ndim: [1, 3], min: 2, max: 4}
          - {type: index, name: index, of: shape}
        property: "0 <= result < math.prod(shape)"
      - kind: function
        id: matches
        name: to_position
        label: your to_position
        args:
          - {type: shape, name: shape, ndim: [1, 3], min: 2, max: 4}
          - {type: index, name: index, of: shape}
        cases: 30
    wrong_solutions:
      - code: |
          def to_position(shape, index):
              pos, step = 0, 1
              for s, i in zip(shape, index):
                  pos, step = pos + i * step, step * s
              return pos
        expect: "your to_position fails for shape = ("
        why: column-major
      - code: |
          def to_position(shape, index):
              return sum(index) * 100
        expect: "0 <= result < math.prod(shape) failed: result is"
        why: out of range
"""


def test_pack_test_proves_a_ported_exercise_with_structured_inputs_and_a_property_in_real_kernels(tmp_path: Path):
    # minitorch's index-to-position test as an instructor ports it: shapes, indices within
    # them, a property without a reference, then the reference; wrong solutions quote both.
    root = tmp_path / "porting"
    (root / "strides").mkdir(parents=True)
    (root / "pack.yaml").write_text(PORTED_PACK)
    (root / "strides" / "lesson.yaml").write_text(PORTED_LESSON)
    out = subprocess.run(
        [sys.executable, "-m", "tutor", "--data-dir", str(tmp_path / "data"), "pack", "test", str(root), "--trust"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "5 passed, 0 failed" in out.stdout, out.stdout
    assert "('0 <= result < math.prod(shape) failed: result is' shown)" in out.stdout


def test_an_alias_of_an_anchor_elsewhere_in_an_expression_says_quote_it(tmp_path: Path):
    # `*args` naming an anchor parses: the expression silently becomes another field's value
    root = _pack(tmp_path)
    f = _lesson(root)
    text = f.read_text().replace("title: First steps with tensors", "title: &args First steps with tensors", 1)
    f.write_text(text.replace("        expr: t\n", "        expr: *args\n", 1))
    line = f.read_text().splitlines().index("        expr: *args") + 1
    problems = [p for p in check_pack(root)[1] if p.line == line]
    assert len(problems) == 1 and "which YAML reads as an alias" in problems[0].message, problems
    assert 'quote it, e.g. expr: "*args"' in problems[0].message
