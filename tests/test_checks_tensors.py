"""value, tensor, raises and same_as_solution checks, with the views/strides and autograd
facts the lessons teach (each asserted against real torch)."""

import json

import numpy as np
import pytest
import torch
from test_checks_support import check, only, verify

from tutor.checks.compare import device_sentence

# Every test here verifies in a real kernel.
pytestmark = pytest.mark.slow

SETUP = "import torch\na = torch.arange(6.).reshape(2, 3)\n"


# ---------------------------------------------------------------- strides and views


def test_transpose_of_contiguous_2x3_has_strides_1_3():
    a = torch.arange(6.0).reshape(2, 3)
    assert a.stride() == (3, 1) and a.t().stride() == (1, 3)
    c = check(kind="value", expr="t.stride()", expected="(1, 3)")
    r = verify("t = a.t()", "t = a.t()", [c], setup=SETUP)
    assert r["passed"] and only(r)["message"] == "✓ t.stride() is (1, 3)"
    r = verify("t = a.t().contiguous()", "t = a.t()", [c], setup=SETUP)
    assert not r["passed"]
    assert only(r)["message"] == "t.stride() is (2, 1), expected (1, 3)"
    assert (only(r)["expected"], only(r)["actual"]) == ("(1, 3)", "(2, 1)")


def test_tensor_check_says_contiguous_copy_not_a_view():
    c = check(kind="tensor", expr="t", compare=["shape", "stride"], shares_storage_with="a")
    r = verify("t = a.t().contiguous()", "t = a.t()", [c], setup=SETUP)
    msg = only(r)["message"]
    assert "t.stride() is (2, 1), expected (1, 3)" in msg
    assert "t is a contiguous copy, not a view of a" in msg
    assert [p["property"] for p in only(r)["details"]["problems"]] == ["stride", "storage"]
    r = verify("t = a.t()", "t = a.t()", [c], setup=SETUP)
    assert r["passed"]
    assert only(r)["message"] == "✓ t has shape (3, 2) and stride (1, 3) and is a view of a"


def test_view_of_transpose_raises_while_reshape_copies():
    a = torch.arange(6.0).reshape(2, 3)
    t = a.t()
    r = t.reshape(-1)
    assert r.untyped_storage().data_ptr() != a.untyped_storage().data_ptr()  # a copy
    t[0, 1] = 99  # writes through the view into a[1, 0]
    assert a[1, 0] == 99
    assert torch.equal(t.reshape(-1), torch.tensor([0.0, 99.0, 1.0, 4.0, 2.0, 5.0]))
    assert torch.equal(r, torch.tensor([0.0, 3.0, 1.0, 4.0, 2.0, 5.0]))  # the earlier copy kept old values

    raises = check(kind="raises", expr="t.view(-1)", exception="RuntimeError", match="view size")
    ok = verify("t = a.t()", "t = a.t()", [raises], setup=SETUP)
    assert ok["passed"] and only(ok)["message"] == "✓ t.view(-1) raises RuntimeError"
    bad = verify("t = a.t().contiguous()", "t = a.t()", [raises], setup=SETUP)
    assert only(bad)["message"].startswith("t.view(-1) ran without error, expected RuntimeError")

    code = "t = a.t()\nt[0, 1] = 99\nr = t.reshape(-1)\n"
    checks = [
        check(kind="value", expr="r", expected="[0., 99., 1., 4., 2., 5.]"),
        check(kind="value", expr="a[1, 0].item()", expected="99.0"),
        check(kind="tensor", expr="r", compare=["shape", "values"], independent_of="a"),
    ]
    assert verify(code, code, checks, setup=SETUP)["passed"]
    view = verify("t = a.t()\nt[0, 1] = 99\nr = a.view(-1)\n", code, [checks[2]], setup=SETUP)
    # said as a fact, not as the fix: copying a.view(-1) would not give t's order
    said = "r shares memory with a (it is a view), expected an independent copy (.clone() makes one)"
    assert said in only(view)["message"] and "use .clone()" not in only(view)["message"]


def test_raises_messages_wrong_class_regex_and_mro():
    base = "t = a.t()"
    wrong = verify(
        "t = a.t()\ndef f():\n    raise ValueError('nope')\n",
        base,
        [check(kind="raises", expr="f()", exception="RuntimeError")],
        setup=SETUP,
    )
    assert only(wrong)["message"] == "f() raised ValueError: nope at line 3 of your code, expected RuntimeError"
    # subclasses match along the MRO (NotImplementedError is a RuntimeError)
    sub = verify(
        "def f():\n    raise NotImplementedError('later')\n",
        "",
        [
            check(kind="raises", expr="f()", exception="RuntimeError"),
            check(kind="raises", expr="f()", exception="Exception"),
            check(kind="raises", expr="x = 1\nraise KeyError('k')", exception="LookupError"),
        ],
    )
    assert sub["passed"], sub
    regex = verify(
        base,
        base,
        [check(kind="raises", expr="t.view(-1)", exception="RuntimeError", match="^nothing like")],
        setup=SETUP,
    )
    assert "but not the expected one: its message should match '^nothing like'" in only(regex)["message"]
    missing = verify("", base, [check(kind="raises", expr="t.view(-1)", exception="RuntimeError")], setup=SETUP)
    assert only(missing)["message"] == "you did not define t"


# ---------------------------------------------------------------- tensor diffs


def test_values_mismatch_summary_counts_indices_and_max_error():
    c = check(kind="tensor", expr="t")
    r = verify("t = a.clone()\nt[0, 1] = 99\nt[1, 2] = 7", "t = a.clone()", [c], setup=SETUP)
    msg = only(r)["message"]
    assert msg == (
        "t differs from the expected values at 2 of 6 elements (first at (0, 1), (1, 2)): "
        "t[0, 1] is 99.0, expected 1.0; max abs error 98"
    )
    stats = only(r)["details"]["problems"][0]["data"]["mismatch"]
    assert stats["mismatched"] == 2 and stats["total"] == 6 and stats["first"] == [[0, 1], [1, 2]]


def test_shape_dtype_and_requires_grad_problems():
    c = check(kind="tensor", expr="t", compare=["shape", "dtype", "requires_grad", "is_leaf", "grad_fn"])
    r = verify("t = torch.zeros(3, 2, dtype=torch.int64)", "t = torch.zeros(2, 3, requires_grad=True) * 2", [c])
    msg = only(r)["message"]
    assert "t has shape (3, 2), expected (2, 3)" in msg
    assert "t has dtype torch.int64, expected torch.float32" in msg
    assert "t.requires_grad is False, expected True" in msg
    assert "t.is_leaf is True, expected False" in msg
    assert "t.grad_fn is None, expected MulBackward0" in msg


def test_device_mismatch_says_how_to_fix():
    assert (
        device_sentence("t", torch.device("cpu"), torch.device("cuda:0"))
        == "t is on cpu, expected cuda:0: create it with device=DEVICE or move it with .to(DEVICE)"
    )
    # The meta device stands in for an accelerator on a CPU-only machine.
    c = check(kind="tensor", expr="t", compare=["shape", "device"])
    r = verify("t = torch.zeros(2, 3)", "t = torch.zeros(2, 3, device=DEVICE)", [c], device="meta")
    assert only(r)["message"] == "t is on cpu, expected meta: create it with device=DEVICE or move it with .to(DEVICE)"
    assert verify("t = torch.zeros(2, 3, device=DEVICE)", "t = torch.zeros(2, 3, device=DEVICE)", [c], device="meta")[
        "passed"
    ]


def test_device_values_compare_like_learners_mean_them():
    from tutor.checks.compare import value_problems

    # DEVICE is torch.device("cuda") while tensors report "cuda:0": the same device
    assert value_problems(torch.device("cuda:0"), torch.device("cuda"), "t.device") == []
    (p,) = value_problems(torch.device("cpu"), torch.device("cuda"), "t.device")
    assert p.sentence == "t.device is cpu, expected cuda: create it with device=DEVICE or move it with .to(DEVICE)"
    r = verify("t = torch.zeros(1)", "", [check(kind="value", expr="t.device", expected="DEVICE")], device="meta")
    assert only(r)["message"].startswith("t.device is cpu, expected meta")


def test_tensor_check_on_something_else_and_big_values_are_summarised():
    r = verify("t = [[1, 2], [3, 4]]", "t = torch.ones(2, 2)", [check(kind="tensor", expr="t")])
    assert only(r)["message"] == "t is a list, expected a tensor (build it with torch.tensor(...))"
    # graph-lifetime/constant-statistic with torch.std_mean: two results, not numbers to build from
    r = verify("t = torch.std_mean(torch.arange(4.0))", "t = torch.ones(2)", [check(kind="tensor", expr="t")])
    message = only(r)["message"]
    assert message.startswith("t is a tuple") and "a tuple of 2 tensors" in message and "unpack it" in message
    assert "torch.tensor(...)" not in message, message
    r = verify("t = torch.zeros(1000, 1000)", "t = torch.ones(1000, 1000)", [check(kind="value", expr="t")])
    res = only(r)
    assert res["actual"] == "tensor of shape (1000, 1000), torch.float32 on cpu"
    assert "at 1,000,000 of 1,000,000 elements" in res["message"] and len(res["message"]) < 300


# ---------------------------------------------------------------- autograd


def test_grads_of_a_times_b_plus_b_squared():
    code = (
        "a = torch.tensor(2., requires_grad=True)\nb = torch.tensor(3., requires_grad=True)\n"
        "c = a * b + b ** 2\nc.backward()\n"
    )
    a = torch.tensor(2.0, requires_grad=True)
    b = torch.tensor(3.0, requires_grad=True)
    (a * b + b**2).backward()
    assert (a.grad.item(), b.grad.item()) == (3.0, 8.0)
    checks = [
        check(kind="value", expr="a.grad", expected="3.0"),
        check(kind="value", expr="b.grad.item()", expected="8.0"),
        check(kind="tensor", expr="b", compare=["grad", "requires_grad", "is_leaf"]),
        check(kind="tensor", expr="c", compare=["grad_fn", "is_leaf"]),
    ]
    r = verify(code, code, checks)
    assert r["passed"], r
    forgot = verify(code.replace("c.backward()\n", ""), code, checks)
    assert (
        "b.grad is None, expected a gradient: no gradient is left in it after your code"
        in (forgot["checks"][2]["message"])
    )
    # Cleared after backward(): the same sentence is true, where "call .backward()" was not.
    cleared = verify(code + "b.grad = None\n", code, checks)
    assert "no gradient is left in it after your code" in cleared["checks"][2]["message"]
    assert "call .backward()" not in json.dumps(cleared)


def test_two_backward_passes_double_the_grad_and_name_accumulation():
    solution = "x = torch.tensor(1., requires_grad=True)\n(3 * x).backward()\n"
    twice = "x = torch.tensor(1., requires_grad=True)\n(3 * x).backward()\n(3 * x).backward()\n"
    x = torch.tensor(1.0, requires_grad=True)
    (3 * x).backward()
    (3 * x).backward()
    assert x.grad.item() == 6.0
    for c in (check(kind="tensor", expr="x", compare=["grad"]), check(kind="value", expr="x.grad")):
        r = verify(twice, solution, [c])
        assert not r["passed"]
        assert "x.grad is 6.0, expected 3.0 (x.grad is 2x the expected gradient)" in only(r)["message"]
        # the statement the code adds to the reference's, then what it did to x.grad
        assert len(r["mistakes"]) == 2, r["mistakes"]
        assert "but for one it adds, line 3: (3 * x).backward()" in r["mistakes"][0]
        assert r["mistakes"][1].startswith("gradients accumulated: x.grad is 2x the expected gradient")
        assert "clear them with zero_grad() (or optimizer.zero_grad()) before each backward" in r["mistakes"][1]
    thrice = twice + "(3 * x).backward()\n"
    r = verify(thrice, solution, [check(kind="value", expr="x.grad")])
    assert any("x.grad is 3x the expected gradient" in m for m in r["mistakes"])


def test_non_leaf_grad_hint():
    """True of each way to a non-leaf without .grad: no retain_grad(), one after backward(),
    one on the tensor the name held before it was rebuilt (which did call it before backward)."""
    solution = "x = torch.ones(2, requires_grad=True)\ny = x * 2\ny.retain_grad()\ny.sum().backward()\n"
    start = "x = torch.ones(2, requires_grad=True)\n"
    for body in (
        "y = x * 2\ny.sum().backward()\n",
        "y = x * 2\ny.sum().backward()\ny.retain_grad()\n",
        "y = x * 2\ny.retain_grad()\ny = x * 2\ny.sum().backward()\n",
    ):
        r = verify(start + body, solution, [check(kind="tensor", expr="y", compare=["grad"])])
        message = only(r)["message"]
        assert (
            "y is not a leaf, and backward() keeps a non-leaf's .grad only where retain_grad() was called "
            "on that very tensor before backward()" in message
        ), message
        assert "call y.retain_grad() before backward()" not in message


# ---------------------------------------------------------------- value check


def test_value_check_equality_and_tolerance():
    exact = check(kind="value", expr="s", expected="0.3")
    r = verify("s = 0.1 + 0.2", "", [exact])
    assert only(r)["message"] == "s is 0.30000000000000004, expected 0.3"
    assert verify("s = 0.1 + 0.2", "", [check(kind="value", expr="s", expected="0.3", atol=1e-9)])["passed"]
    # torch.Size equals a tuple, a tensor equals a list of the same numbers, NaN equals NaN
    checks = [
        check(kind="value", expr="t.shape", expected="(2, 3)"),
        check(kind="value", expr="t", expected="[[0., 1., 2.], [3., 4., 5.]]"),
        check(kind="value", expr="n", expected="float('nan')"),
        check(kind="value", expr="arr", expected="np.arange(3)"),
        check(kind="value", expr="pair", rtol=1e-3),
    ]
    code = (
        "import numpy as np\nt = torch.arange(6.).reshape(2, 3)\nn = float('nan')\narr = np.arange(3)\n"
        "pair = (torch.tensor([1.0, 2.0]), 3.0)\n"
    )
    solution = "pair = (torch.tensor([1.0005, 2.0]), 3.001)\n"
    assert verify(code, solution, checks)["passed"]
    r = verify(code.replace("3.0)", "4.0)"), solution, [checks[-1]])
    assert only(r)["message"] == "pair[1] is 4.0, expected 3.001"


def test_value_check_on_a_missing_name_after_an_error():
    code = "t = torch.zeros(2)\nraise ValueError('bad input')\nu = t + 1\n"
    r = verify(code, "t = torch.zeros(2)\nu = t + 1", [check(kind="value", expr="t"), check(kind="value", expr="u")])
    assert r["checks"][0]["passed"]  # what ran before the error is still checked
    assert r["checks"][1]["message"] == "u is not defined: your code stopped at line 2 with ValueError: bad input"


# ---------------------------------------------------------------- same_as_solution


def test_same_as_solution_with_seeded_random_tensors():
    solution = "w = torch.randn(3, 4)\nb = torch.zeros(4)\nn = 3"
    c = check(kind="same_as_solution", names=["w", "b", "n"])
    r = verify(solution, solution, [c])
    assert r["passed"] and only(r)["message"] == "✓ w, b and n match the reference solution"
    r = verify("w = torch.randn(3, 4)\nn = 3", solution, [c])
    assert only(r)["message"] == "you did not define b"
    r = verify("w = torch.randn(4, 3)\nb = torch.zeros(4, dtype=torch.int64)\nn = 4", solution, [c])
    msg = only(r)["message"]
    assert "w has shape (4, 3), expected (3, 4)" in msg and "b has dtype torch.int64, expected torch.float32" in msg
    assert "n is 4, expected 3" in msg


def test_same_as_solution_tolerance_and_modules():
    solution = "torch.manual_seed(1)\nlin = torch.nn.Linear(3, 2)\nv = torch.tensor([1.0, 2.0])"
    c = check(kind="same_as_solution", names=["lin", "v"], atol=1e-3)
    near = "torch.manual_seed(1)\nlin = torch.nn.Linear(3, 2)\nv = torch.tensor([1.0004, 2.0])"
    assert verify(near, solution, [c])["passed"]
    other = "torch.manual_seed(2)\nlin = torch.nn.Linear(3, 2)\nv = torch.tensor([1.0, 2.0])"
    r = verify(other, solution, [c])
    assert "lin.weight differs from the expected values" in only(r)["message"]


# ---------------------------------------------------------------- properties of the diff

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tutor.checks.compare import value_problems  # noqa: E402

floats = st.floats(allow_nan=True, allow_infinity=True, width=32)


@settings(max_examples=80, deadline=None)
@given(values=st.lists(floats, min_size=1, max_size=12), where=st.integers(0, 11), delta=st.floats(1.0, 1e6))
def test_a_tensor_equals_its_copy_and_one_change_is_one_mismatch(values, where, delta):
    t = torch.tensor(values, dtype=torch.float32)
    assert value_problems(t, t.clone(), "t") == []  # NaN where NaN is expected counts as equal
    i = where % len(values)
    changed = t.clone()
    changed[i] = 0.0 if not torch.isfinite(t[i]) else t[i] + delta * max(1.0, abs(float(t[i])))
    if torch.equal(changed, t):
        return  # float32 rounding swallowed the change
    (problem,) = value_problems(changed, t, "t")
    stats = problem.data["mismatch"]
    assert stats["mismatched"] == 1 and stats["first"] == [(i,)] and stats["total"] == len(values)


def test_mismatch_shows_enough_digits_and_counts_nan():
    from tutor.checks.compare import mismatch, mismatch_sentence

    a = np.array([[-0.31356101, 1.0]], dtype=np.float64)
    e = np.array([[-0.31356112, 1.0]], dtype=np.float64)
    text = mismatch_sentence("g", mismatch(a, e, (0.0, 1e-12)))
    assert "is -0.313561, expected -0.3135611" in text  # the first digit count at which they differ
    nan = mismatch_sentence("out", mismatch(np.array([np.nan, 1.0, np.nan]), np.array([0.0, 1.0, 0.5])))
    assert "2 values are nan where a number is expected" in nan


# ---------------------------------------------------------------- what a value was computed through


GRAPH_SETUP = "import torch\nimport torch.nn.functional as F\nx = torch.tensor([[1.0, 2.0, 0.5]], requires_grad=True)\n"
BY_HAND = "y = -F.log_softmax(x, dim=1)[0, 2]\n"


def test_the_autograd_graph_tells_a_library_result_from_one_computed_by_hand():
    # The graph crosses as data: the ops that made the value, not the text that names them.
    c = check(kind="tensor", expr="y", compare=["shape"], graph_with=["LogSoftmax"], graph_without=["NllLoss"])
    ok = verify(BY_HAND, BY_HAND, [c], setup=GRAPH_SETUP)
    assert ok["passed"] and only(ok)["message"] == "✓ y has shape () and is computed through LogSoftmax"

    # the library's loss under another name, with a log_softmax whose result is dropped
    renamed = verify(
        "F.log_softmax(x, dim=1)\ny = F.nll_loss(F.log_softmax(x, dim=1), torch.tensor([2]))\n",
        BY_HAND,
        [c],
        setup=GRAPH_SETUP,
    )
    assert not renamed["passed"]
    assert "y was computed through NllLoss (its autograd graph holds NllLossBackward0)" in only(renamed)["message"]

    # read back as a number: no graph at all
    number = verify("y = torch.tensor(F.cross_entropy(x, torch.tensor([2])).item())\n", BY_HAND, [c], setup=GRAPH_SETUP)
    assert "y has no autograd graph (its grad_fn is None)" in only(number)["message"]

    # computed, but not through the op asked for
    other = verify("y = -(x.softmax(dim=1).log())[0, 2]\n", BY_HAND, [c], setup=GRAPH_SETUP)
    said = only(other)["message"]
    assert "y was not computed through LogSoftmax: its autograd graph holds" in said and "SoftmaxBackward0" in said


def test_a_graph_rule_may_name_alternatives():
    # Index|Gather: either op will do; the sentence names them all when neither is there.
    c = check(kind="tensor", expr="y", compare=["shape"], graph_with=["Index|Gather"])
    gathered = "y = -F.log_softmax(x, dim=1).gather(1, torch.tensor([[2]])).mean()\n"
    assert verify(gathered, BY_HAND, [c], setup=GRAPH_SETUP)["passed"]
    onehot = "y = -(F.log_softmax(x, dim=1) * torch.tensor([[0.0, 0.0, 1.0]])).sum()\n"
    said = only(verify(onehot, BY_HAND, [c], setup=GRAPH_SETUP))["message"]
    assert "y was not computed through Index or Gather" in said, said


def test_a_custom_autograd_function_named_like_torch_s_op_is_not_that_op():
    # The code names its own Function class: LogSoftmax wrapping the library's loss must
    # not pass for torch's LogSoftmaxBackward0.
    c = check(kind="tensor", expr="y", compare=["shape"], graph_with=["LogSoftmax"], graph_without=["NllLoss"])
    named = (
        "class LogSoftmax(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, x):\n"
        "        return F.cross_entropy(x, torch.tensor([2]))\n"
        "    @staticmethod\n"
        "    def backward(ctx, g):\n"
        "        return g * torch.ones(1, 3)\n"
        "y = LogSoftmax.apply(x)\n"
    )
    said = only(verify(named, BY_HAND, [c], setup=GRAPH_SETUP))["message"]
    assert "y was not computed through LogSoftmax" in said and "autograd.Function LogSoftmax" in said, said


def test_a_relation_to_the_setup_s_own_tensor_is_named_as_such():
    # independent_of a private setup name: the setup's tensor itself, whatever the code
    # rebinds the public name to; the sentence never shows the private name.
    setup = "import torch\nsignal = torch.arange(10.0)\n_SIGNAL = signal\n"
    c = check(kind="tensor", expr="window", compare=["shape", "values"], independent_of="_SIGNAL")
    rebound = "window = signal[2:6]\nsignal = signal.clone()\n"
    said = only(verify(rebound, "window = signal[2:6].clone()\n", [c], setup=setup))["message"]
    assert "window shares memory with the setup's own tensor" in said and "_SIGNAL" not in said, said


def test_a_tensor_no_backward_ran_through_is_told_how_by_its_shape():
    # A loss is backpropagated from itself; h, a (3,) activation, through a loss made from it:
    # "call h.backward()" would raise for h (a non-scalar needs a gradient argument).
    setup = "import torch\nw = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)\n"
    solution = "h = torch.sigmoid(w)\nloss = h.sum()\nloss.backward()\n"
    code = "h = torch.sigmoid(w)\nloss = torch.sigmoid(w).sum()\nloss.backward()\n"
    r = verify(code, solution, [check(kind="tensor", expr="h", compare=["backpropagated"])], setup=setup)
    assert not r["passed"]
    assert only(r)["message"].endswith("call backward() on a loss computed from h"), r
    code = "h = torch.sigmoid(w)\nloss = h.sum()\n"
    r = verify(code, solution, [check(kind="tensor", expr="loss", compare=["backpropagated"])], setup=setup)
    assert only(r)["message"].endswith("call loss.backward()"), r
