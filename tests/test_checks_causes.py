"""Cause-finding, with no authored mistakes: a wrong tensor is compared with cheap
transformations of the expected one (causes.py), and an exception with what the learner's
line held when it was raised (errorcause.py). Each case is a real wrong solution run with
real torch; the last tests run them through `ptfund-tutor check` in real kernels."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_checks_support import check, cli_check, verify, write_pack

pytestmark = pytest.mark.slow

SETUP = (
    "import io\nimport torch\ntorch.manual_seed(0)\nx = torch.randn(6, 4)\nW = torch.randn(3, 4)\nb = torch.randn(3)\n"
)
OUT = [check(kind="tensor", expr="out", rtol=1e-5)]


def said(code: str, solution: str, checks=OUT) -> str:
    r = verify(code, solution, checks, setup=SETUP)
    assert not r["passed"]
    return "\n".join(r["mistakes"])


@pytest.mark.parametrize(
    ("code", "solution", "sentence"),
    [
        (
            "out = x @ W.T",
            "out = x @ W.T + b",
            "out is the expected value minus a term that varies only along dim 1 (the same for every index of dim 0",
        ),
        ("out = W @ x.T", "out = -(W @ x.T)", "out is the expected value with its sign flipped everywhere"),
        ("out = x * 0.5", "out = x * 0.2", "out is 2.5 times the expected value everywhere"),
        ("out = x / 3**0.5", "out = x / 3", "out is 1.732 times the expected value everywhere"),
        ("out = x + 1.5", "out = x", "out is the expected value plus 1.5 everywhere"),
        (
            "out = torch.roll(x, 2, 0)",
            "out = x",
            "out holds the expected values shifted by 2 along dim 0, wrapping round",
        ),
        ("out = x.flip(1)", "out = x", "out holds the expected values in reverse order along dim 1"),
        ("out = x[1:5]", "out = x[0:4]", "out along dim 0 holds at index i the expected value at i+1"),
        ("out = x[0:4]", "out = x[0:3]", "out has the expected values with one element more at the end of dim 0"),
        ("out = x.sum(1, keepdim=True)", "out = x.sum(1)", "out has the expected values with an extra dim of size 1"),
        (
            "out = x.softmax(0)",
            "out = x.softmax(1)",
            "out is x.softmax(dim=0) where the reference computes x.softmax(dim=1)",
        ),
        ("out = x.sum(0)", "out = x.sum(1)", "out is x.sum(dim=0) where the reference computes x.sum(dim=1)"),
        ("out = x.std(1)", "out = x.std(0)", "out is x.std(dim=1) where the reference computes x.std(dim=0)"),
        (
            "out = x.var()",
            "out = x.var(dim=0)",
            "out is x.var() where the reference computes x.var(dim=0): without dim, var folds every element",
        ),
        (
            "out = x.mean()",
            "out = x.mean(1, keepdim=True)",
            "out is x.mean() where the reference computes x.mean(dim=1, keepdim=True): without dim",
        ),
        (
            "out = torch.relu(x @ W.T + b)",
            "out = x @ W.T + b",
            "out is the expected value with its negative entries set to 0 (out == expected.clamp(min=0))",
        ),
        (
            "out = x @ W.T + b",
            "out = (x @ W.T + b).clamp(min=0)",
            "out has negative entries where the expected value has 0, and the expected value elsewhere",
        ),
    ],
)
def test_a_wrong_tensor_is_named_by_the_transformation_that_reproduces_it(code, solution, sentence):
    assert sentence in said(code, solution)


def test_a_window_one_place_off_in_a_rising_sequence_is_not_said_to_be_a_constant_term():
    # views-strides/clone-window: signal is an arange, so signal[1:5] is also signal[2:6] - 1;
    # "a constant term is added" was said of a slice one place early.
    setup = "import torch\nsignal = torch.arange(10.0)\n"
    checks = [check(kind="tensor", expr="window")]
    r = verify("window = signal[1:5].clone()", "window = signal[2:6].clone()", checks, setup=setup)
    text = "\n".join(r["mistakes"])
    assert "a constant term is added" not in text and "starts one place early" in text, text
    # where the values are not a rising sequence, a constant added is still said (hedged)
    r = verify("window = signal[2:6].clone() * 0 + 1", "window = signal[2:6].clone() * 0", checks, setup=setup)
    assert "plus 1 everywhere: consistent with a constant term" in "\n".join(r["mistakes"])


def test_a_list_of_numbers_is_read_as_a_tensor_is():
    # training-loop/train-step: losses recorded after the step are the expected list shifted by one
    setup = "import torch\nvals = [3.0, 2.5, 1.75, 1.0, 0.5, 0.25]\n"
    checks = [check(kind="value", expr="losses", rtol=1e-6)]
    r = verify("losses = vals[1:] + [0.1]", "losses = list(vals)", checks, setup=setup)
    assert any("holds at index i the expected value at i+1" in s for s in r["mistakes"]), r["mistakes"]
    r = verify("losses = [v * 2 for v in vals]", "losses = list(vals)", checks, setup=setup)
    assert any("losses is exactly 2 times the expected value" in s for s in r["mistakes"]), r["mistakes"]
    # flags and short lists are left alone
    r = verify("losses = [True, False, True]", "losses = [False, True, False]", checks, setup=setup)
    assert not any("expected value" in s for s in r["mistakes"]), r["mistakes"]


def test_a_value_no_transformation_reproduces_gets_only_the_diff():
    r = verify("out = x * 0 + torch.randn(6, 4)", "out = x", OUT, setup=SETUP)
    assert "differs from the expected values at 24 of 24 elements (first at (0, 0)" in r["checks"][0]["message"]
    assert r["mistakes"] == []


def test_a_relu_is_not_read_where_the_values_differ_elsewhere_too():
    # Negative entries set to 0, and one positive entry changed: no ReLU is claimed.
    code = "out = torch.relu(x @ W.T + b)\nout[out > 0.5] += 1.0"
    assert "ReLU" not in said(code, "out = x @ W.T + b")


def test_a_cause_is_said_only_within_the_check_s_tolerance():
    # 3 times the expected value but for one element: no constant factor is claimed
    code = "out = x * 3\nout[2, 1] += 0.5"
    assert "times the expected value" not in said(code, "out = x")


def test_a_wrong_reduction_dim_in_a_function_is_named_with_the_argument():
    fn = [check(kind="function", name="f", cases=4, args=[{"type": "tensor", "shape": [4, 3]}])]
    text = said(
        "def f(logits):\n    return logits.log_softmax(0)\n", "def f(logits):\n    return logits.log_softmax(1)\n", fn
    )
    assert "logits.log_softmax(dim=0) where the reference computes logits.log_softmax(dim=1)" in text


def test_a_result_shaped_as_an_input_reduced_over_another_dim_is_named_from_shapes_alone():
    # (x * mask).sum(dim=2) where the reference sums dim 1: the values are of another tensor
    # (x masked), so only the shapes tell, and they tell one dim each.
    fn = [check(kind="function", name="f", cases=4, args=[{"type": "tensor", "shape": [2, 3, 4]}])]
    mask = "torch.arange(x.shape[1]) < 2"
    text = said(
        f"import torch\ndef f(x):\n    return (x * ({mask})[None, :, None]).sum(dim=2)\n",
        f"import torch\ndef f(x):\n    return (x * ({mask})[None, :, None]).sum(dim=1)\n",
        fn,
    )
    assert (
        "result has the shape of x, (2, 3, 4), without dim 2, where the expected value has it without dim 1: "
        "consistent with reducing over dim 2 where dim 1 was meant" in text
    )


def test_no_reduction_dim_is_read_from_shapes_that_more_than_one_dim_gives():
    from tutor.checks import causes

    sources = [("x", __import__("torch").zeros(3, 3, 4))]
    assert causes.reduced_shape("out", (3, 3), (3, 4), sources) is None  # (3, 3) is x without dim 2 only...
    # ... but (3, 4) is x without dim 0 or dim 1: which one was meant is not established
    assert causes.reduced_shape("out", (3, 4), (3, 3), sources) is None


def test_an_exception_names_the_line_and_the_shapes_on_it():
    text = said("h = x * 2\nout = h @ W\n", "out = x @ W.T")
    assert (
        "line 2 of your code, `out = h @ W`, raised RuntimeError; at that point h has shape (6, 4), float32 on cpu "
        "and W has shape (3, 4), float32 on cpu" in text
    )


def test_an_exception_inside_the_learner_s_function_names_its_line():
    fn = [check(kind="function", name="f", cases=3, args=[{"type": "tensor", "shape": [4, 3]}] * 2)]
    text = said("def f(a, b):\n    h = a * 2\n    return h @ b\n", "def f(a, b):\n    return (a * 2) @ b.T\n", fn)
    assert "line 3 of your function, `return h @ b`, raised RuntimeError; at that point h has shape (4, 3)" in text


def test_an_exception_describes_no_name_the_line_is_still_to_bind():
    """`h = a @ b` raised inside f: f's h is not bound yet, so the module's h (another value)
    is not what it held "at that point", and neither is the line's own target."""
    fn = [check(kind="function", name="f", cases=3, args=[{"type": "tensor", "shape": [4, 3]}] * 2)]
    code = "h = torch.ones(11, 16)\ndef f(a, b):\n    h = a @ b\n    return h\n"
    text = said(code, "def f(a, b):\n    return a @ b.T\n", fn)
    assert "line 3 of your function, `h = a @ b`, raised RuntimeError; at that point a has shape (4, 3)" in text, text
    assert "(11, 16)" not in text and "h has shape" not in text, text


def test_an_exception_names_an_attribute_still_none_and_a_layer_s_sizes():
    text = said("w = torch.ones(4, requires_grad=True)\nout = x @ (w - w.grad)\n", "out = x @ W.T")
    assert "raised TypeError; at that point x has shape (6, 4), float32 on cpu, w has shape (4,)" in text
    assert "and w.grad is None" in text
    text = said("layer = torch.nn.Linear(3, 5)\nout = layer(x)\n", "out = x @ W.T")
    assert "at that point layer is Linear(in_features=3, out_features=5, bias=True) and x has shape (6, 4)" in text


def test_an_error_that_says_what_it_needs_gets_no_shapes():
    text = said("out = x.no_such_method()\n", "out = x @ W.T")
    assert "at that point" not in text


SAVE = "buf = io.BytesIO()\ntorch.save({'W': W}, buf)\n"


def test_eof_from_a_buffer_at_its_end_says_seek_0():
    text = said(
        SAVE + "loaded = torch.load(buf, weights_only=True)\n",
        SAVE + "buf.seek(0)\nloaded = torch.load(buf)\n",
        [check(kind="value", expr="loaded['W']")],
    )
    assert "raised EOFError because buf is at its end (position" in text
    assert "call buf.seek(0) before reading it back" in text


def test_eof_from_a_buffer_not_at_its_end_does_not_blame_seek():
    code = "buf = io.BytesIO(b'')\nloaded = torch.load(buf, weights_only=True)\n"
    text = said(code, SAVE + "buf.seek(0)\nloaded = torch.load(buf)\n", [check(kind="value", expr="loaded['W']")])
    assert "seek(0)" not in text


# ---------------------------------------------------------------- real kernels

EXERCISES = """\
  - id: bias
    title: A linear layer by hand
    prompt: Compute `out = x @ W.T + b`.
    setup: |
      import torch
      x = torch.randn(6, 4)
      W = torch.randn(3, 4)
      b = torch.randn(3)
    solution: |
      out = x @ W.T + b
    checks:
      - kind: tensor
        expr: out
        rtol: 1.0e-5
  - id: log-probs
    title: Log-probabilities of each row
    prompt: Write `log_probs(logits)`, the log-softmax of each row.
    setup: |
      import torch
    solution: |
      def log_probs(logits):
          return logits.log_softmax(dim=1)
    second_world: false
    second_world_reason: the function check draws its own inputs
    checks:
      - kind: function
        name: log_probs
        args: [{type: tensor, shape: [n, 3]}]
        dims: {n: [2, 5]}
        devices: [default]
        cases: 5
  - id: roundtrip
    title: A round trip through a buffer
    prompt: Save `W` into a buffer and load it back as `loaded`.
    setup: |
      import io
      import torch
      W = torch.randn(3, 4)
    solution: |
      buf = io.BytesIO()
      torch.save({"W": W}, buf)
      buf.seek(0)
      loaded = torch.load(buf, weights_only=True)
    checks:
      - kind: value
        expr: loaded["W"]
"""


@pytest.fixture(scope="module")
def pack(tmp_path_factory) -> Path:
    return write_pack(tmp_path_factory.mktemp("packs") / "causes", EXERCISES)


def check_in_kernels(pack: Path, home: Path, exercise: str, code: str) -> dict:
    return cli_check(pack, home, f"causes:bugs/{exercise}", code)


def test_in_a_real_kernel_a_missing_bias_is_named(pack, tmp_path):
    data = check_in_kernels(pack, tmp_path / "home", "bias", "out = x @ W.T\n")
    assert any("a term that varies only along dim 1" in m and "like a bias" in m for m in data["mistakes"]), data
    assert "auto:cause:bias-like" in data["mistake_ids"]


def test_in_a_real_kernel_a_function_s_wrong_dim_and_its_exception_are_named(pack, tmp_path):
    data = check_in_kernels(
        pack, tmp_path / "home", "log-probs", "def log_probs(logits):\n    return logits.log_softmax(0)\n"
    )
    assert any(
        "result is logits.log_softmax(dim=0) where the reference computes logits.log_softmax(dim=1)" in m
        for m in data["mistakes"]
    ), data
    code = "import torch\n\ndef log_probs(logits):\n    w = torch.ones(4, 3)\n    return (logits @ w).log_softmax(1)\n"
    data = check_in_kernels(pack, tmp_path / "home", "log-probs", code)
    assert any(
        "line 5 of your function, `return (logits @ w).log_softmax(1)`, raised RuntimeError; at that point logits "
        "has shape"
        in m
        and "w has shape (4, 3), float32 on cpu" in m
        for m in data["mistakes"]
    ), data


def test_in_a_real_kernel_a_missing_seek_is_named(pack, tmp_path):
    code = 'buf = io.BytesIO()\ntorch.save({"W": W}, buf)\nloaded = torch.load(buf, weights_only=True)\n'
    data = check_in_kernels(pack, tmp_path / "home", "roundtrip", code)
    assert any("buf is at its end" in m and "buf.seek(0)" in m for m in data["mistakes"]), data


def test_values_left_by_code_that_raised_get_no_reading():
    # The step raised before it ran: w still holds the setup's values, 1.25x the expected.
    # That ratio is an accident of where the code stopped, not a constant factor: only the
    # exception is said.
    setup = "import torch\nw = torch.tensor([1.0, -2.0, 3.0])\ng = 2 * w\n"
    solution = "w -= 0.1 * g\n"
    code = "w.copy_(torch.tensor([0.8, -1.6]))\n"
    r = verify(code, solution, [check(kind="tensor", expr="w")], setup=setup)
    assert not r["passed"] and r["error"]["ename"] == "RuntimeError"
    text = "\n".join(r["mistakes"])
    assert "line 1 of your code" in text
    assert "times the expected" not in text and "constant factor" not in text


def test_a_value_the_code_never_changed_is_said_so_not_read_as_a_factor():
    # The update never ran: w is the setup's, 1.25x the expected. Not a constant factor.
    setup = "import torch\nw = torch.tensor([1.0, -2.0, 3.0])\ng = 2 * w\n"
    solution = "w -= 0.1 * g\n"
    code = "step = 0.1 * g  # computed, never applied\n"
    r = verify(code, solution, [check(kind="tensor", expr="w")], setup=setup)
    assert not r["passed"]
    text = "\n".join(r["mistakes"])
    assert "w is still exactly what the setup made: nothing your code did to it is left" in text
    assert "times the expected" not in text
    # The reference updates under no_grad and the code never enters it: no work was done,
    # so "autograd records that work too" would be false.
    leaf = "import torch\nw = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)\n(w ** 2).sum().backward()\n"
    r = verify(
        "step = 0.1 * w.grad\n",
        "with torch.no_grad():\n    w -= 0.1 * w.grad\n",
        [check(kind="tensor", expr="w")],
        setup=leaf,
    )
    text = "\n".join(r["mistakes"])
    assert "nothing your code did to it is left" in text and "no_grad" not in text
    # Changed, even back to the same values through another object, is not "never changed".
    r = verify("w = w.clone()\n", solution, [check(kind="tensor", expr="w")], setup=setup)
    assert "exactly what the setup made" not in "\n".join(r["mistakes"])


def test_a_tensor_whose_gradient_the_code_wrote_is_not_untouched():
    # backward() leaves x's values as setup made them and writes x.grad: the code did change
    # x, and "your code never changed it" would be false (here x.grad is 2x the expected).
    setup = "import torch\nx = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\ny = x ** 2\n"
    r = verify(
        "y.sum().backward()\nx.grad *= 2\n",
        "y.backward(torch.ones_like(y))\n",
        [check(kind="tensor", expr="x", compare=["values", "grad"])],
        setup=setup,
    )
    assert not r["passed"]
    assert "exactly what the setup made" not in "\n".join(r["mistakes"]), r["mistakes"]


def _check_lines(code: str, solution: str, checks) -> str:
    r = verify(code, solution, checks, setup=SETUP)
    assert not r["passed"]
    return "\n".join(str(c.get("message")) for c in r["checks"])


def test_a_function_s_results_returned_in_the_other_order_are_named():
    fn = [check(kind="function", name="f", cases=3, args=[{"type": "tensor", "shape": [4, 3]}])]
    text = _check_lines(
        "def f(x):\n    return x.sum(0), x.mean(0), x.max()\n",
        "def f(x):\n    return x.mean(0), x.sum(0), x.max()\n",
        fn,
    )
    assert "result[0] and result[1] are in each other's place: result[0] is what result[1] should be" in text, text
    # one item wrong and another right where the first should be: no swap is claimed
    text = _check_lines(
        "def f(x):\n    return x.sum(0), x.sum(0), x.max()\n",
        "def f(x):\n    return x.mean(0), x.sum(0), x.max()\n",
        fn,
    )
    assert "each other's place" not in text


def test_a_factor_near_one_is_shown_with_its_digits_and_read_as_a_small_term():
    """out / sqrt(1 + 1e-5) where out was meant: 0.999995 times, not "1 times", and a small
    term (an eps), not a scale such as a learning rate."""
    exact = [check(kind="tensor", expr="out", rtol=1e-7, atol=1e-9)]
    text = said("out = x / (1 + 1e-5) ** 0.5\n", "out = x.clone()\n", exact)
    assert "out is 0.999995 times the expected value everywhere: close, but off by a tiny constant factor" in text
    assert "is 1 times" not in text, text


def test_a_variance_call_more_is_not_a_biased_one_in_place_of_the_unbiased():
    """The code computes one biased variance more than the reference (for another value) and
    keeps the reference's unbiased one: no "biased where yours uses the unbiased default"."""
    code = "v = x.var(0)\nspread = x.var(0, unbiased=False)\nout = x * 2\n"
    text = said(code, "v = x.var(0)\nout = x * 3\n")
    assert "variance" not in text, text
    swapped = said("v = x.var(0, unbiased=False)\nout = v\n", "v = x.var(0)\nout = v\n")
    assert "the reference computes an unbiased variance" in swapped, swapped


def test_values_the_setup_gave_are_said_so_where_only_the_gradient_changed():
    # in-place/sgd-step with the update into a copy (w.clone().sub_) and w.grad cleared: w is
    # not untouched (its .grad changed), but its values are still the setup's, which is the
    # cause, not "1.25 times the expected value" (the step is a scaling for this loss).
    setup = "import torch\nw = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)\n(w ** 2).sum().backward()\n"
    solution = "with torch.no_grad():\n    w -= 0.1 * w.grad\nw.grad = None\n"
    code = "with torch.no_grad():\n    w.clone().sub_(0.1 * w.grad)\nw.grad = None\n"
    r = verify(code, solution, [check(kind="tensor", expr="w")], setup=setup)
    assert not r["passed"]
    text = "\n".join(r["mistakes"])
    assert "w still holds exactly the values the setup gave it" in text, text
    assert "times the expected" not in text and "constant factor" not in text
    # Where the values are right and the gradient is what differs, the values are no cause.
    r = verify("w.grad *= 2\n", "pass\n", [check(kind="tensor", expr="w", compare=["values", "grad"])], setup=setup)
    assert not r["passed"] and "values the setup gave it" not in "\n".join(r["mistakes"])


@pytest.mark.parametrize(
    ("actual", "expected", "says"),
    [
        # torch.tensor([classes]) for torch.tensor(classes)
        ([[0, 2, 1, 1]], [0, 2, 1, 1], "brackets around the data given to torch.tensor"),
        # a target taken as data[i:i+1] where data[i] was meant
        ([5.0], 5.0, "a slice of length 1 where an index was meant"),
        ([[1.0, 2.0]], [1.0, 2.0], "x[i:i+1] keeps the dim x[i] drops"),
        ([1.0, 2.0], [[1.0, 2.0]], "an index where a slice of length 1 was meant"),
    ],
)
def test_a_size_one_dim_is_read_with_the_slices_and_brackets_that_make_one(actual, expected, says):
    import torch

    from tutor.checks import causes

    sentence = causes.reshaped("t", torch.tensor(actual), torch.tensor(expected))
    assert sentence is not None and says in sentence, sentence


def test_a_list_of_values_one_step_late_is_read_as_values_recorded_late():
    # training-loop/train-step returning the loss computed after opt.step(): each loss is the
    # reference's next one, which is no slice at all.
    import torch

    from tutor.checks import causes

    expected = torch.tensor([1.6, 0.8, 0.44, 0.29, 0.22])
    actual = torch.tensor([0.8, 0.44, 0.29, 0.22, 0.18])
    sentence = causes.explain("losses", actual, expected)
    assert sentence is not None and "values recorded one step late (a loss read after the update)" in sentence


def test_a_square_and_a_square_root_of_the_expected_values_are_read_as_such():
    # hooks/output-grads recording grad.pow(2).sum() where the norm was meant
    import torch

    from tutor.checks import causes

    expected = torch.tensor([1.02358, 0.5, 2.25])
    said = causes.explain("norms", expected**2, expected)
    assert said is not None and said.startswith("norms is the square of the expected value"), said
    said = causes.explain("var", expected.sqrt(), expected)
    assert said is not None and said.startswith("var is the square root of the expected value"), said
    # All equal: a square is a constant factor too, and which it is cannot be told.
    said = causes.explain("c", torch.full((3,), 4.0), torch.full((3,), 2.0))
    assert said is not None and "square" not in said


def test_a_factor_that_varies_along_one_dim_is_read_as_a_per_feature_scale():
    # modules/standardize multiplying by std where it divides: the ratio is std² per column
    import torch

    from tutor.checks import causes

    x = torch.arange(12.0).reshape(3, 4) - 5
    std = torch.tensor([0.5, 2.0, 3.0, 1.5])
    said = causes.explain("out", x * std, x / std)
    assert said is not None and said.startswith("out is the expected value times a factor that varies only along dim 1")
    assert "a standard deviation that multiplies where it should divide" in said


def test_one_column_wrong_is_read_on_a_case_large_enough_to_show_it():
    # tensors/follow-the-input with a column of zeros for the bias column of ones: the case the
    # check reports (the smallest, 1 x 1) has too few values to read, a larger one shows it.
    fn = [
        check(
            kind="function",
            name="add_bias_column",
            cases=8,
            args=[{"type": "tensor", "shape": ["n", "d"]}],
            dims={"n": [1, 5], "d": [1, 4]},
        )
    ]
    solution = "def add_bias_column(x):\n    return torch.cat([x, x.new_ones(x.shape[0], 1)], dim=1)\n"
    text = said(solution.replace("new_ones", "new_zeros"), solution, fn)
    assert "result differs from the expected value only at index" in text and "that column's values are wrong" in text
    assert text.startswith("for x of shape (") or "\nfor x of shape (" in text, text


def test_a_factor_with_no_cause_on_the_smallest_case_is_read_on_a_larger_one():
    # numpy-bridge/broadcast-trap dividing by n + 1: on the case reported (n = 1) the result is
    # 1/2 of the expected, which says nothing; on a larger case it is n/(n + 1), a count off by one
    fn = [
        check(
            kind="function",
            name="mse",
            cases=12,
            args=[{"type": "tensor", "shape": ["n"]}, {"type": "tensor", "shape": ["n"]}],
            dims={"n": [1, 6]},
        )
    ]
    solution = "def mse(pred, target):\n    return ((pred - target) ** 2).sum() / target.shape[0]\n"
    text = said(solution.replace("target.shape[0]", "(target.shape[0] + 1)"), solution, fn)
    assert "consistent with a count off by one" in text and "n + 1 where n was meant, or n where n + 1 was" in text
    assert "exactly 1/2 of the expected value" not in text, text  # the bare fact is replaced
    assert "\nfor pred of shape (" in text, text
    # a half on every case has no cause on a larger one either: the fact stays, said once
    text = said(solution.replace("/ target.shape[0]", "/ target.shape[0] * 0.5"), solution, fn)
    assert "result is exactly 1/2 of the expected value" in text and "for pred of shape" not in text, text


def test_a_divisor_that_is_the_batch_s_total_where_each_row_s_own_was_meant_is_read_as_such():
    # devices-precision/masked-mean dividing by mask.sum() (every real step of the batch) where
    # each row's length was meant: the factor per row is lengths / lengths.sum()
    fn = [
        check(
            kind="function",
            name="masked_mean",
            cases=12,
            args=[
                {"type": "tensor", "shape": ["b", "t", "d"]},
                {"type": "tensor", "shape": ["b"], "dtypes": ["int64"], "min": 1, "max": 4},
            ],
            dims={"b": [3, 5], "t": [4, 4], "d": [2, 3]},
        )
    ]
    solution = (
        "def masked_mean(x, lengths):\n"
        "    mask = (torch.arange(x.shape[1]) < lengths[:, None]).to(x.dtype).unsqueeze(-1)\n"
        "    return (x * mask).sum(dim=1) / mask.sum(dim=1)\n"
    )
    text = said(solution.replace("mask.sum(dim=1)", "mask.sum()"), solution, fn)
    assert "which is lengths / lengths.sum() element by element" in text, text
    assert "a division by the total of lengths where each row's own entry of lengths was meant" in text, text
    assert "per-feature" not in text, text  # dim 0 holds the batch's rows, not features


def test_one_column_off_by_a_constant_is_not_read_as_a_bias_for_every_column():
    import torch

    from tutor.checks import causes

    e = torch.arange(15.0).reshape(5, 3)
    a = e.clone()
    a[:, 2] -= 1
    said = causes.explain("out", a, e)
    assert said == (
        "out differs from the expected value only at index 2 of dim 1, by -1 at every index of dim 0: that column's "
        "values are wrong (a constant such as 0 where 1 belongs, say) or have a term added"
    )


def test_a_count_one_off_is_read_as_off_by_one_and_none_at_all_is_not():
    from tutor.checks.compare import value_problems

    (problem,) = value_problems(15, 16, "len(ds)")
    assert problem.data["pattern"].startswith(
        "len(ds) is one fewer than expected: consistent with something counted or done once"
    )
    (problem,) = value_problems(0, 1, "n")
    assert not (problem.data or {}).get("pattern")
    (problem,) = value_problems(True, False, "flag")
    assert not (problem.data or {}).get("pattern")


def test_a_factor_within_a_tenth_of_a_percent_of_a_count_is_named_with_the_count():
    # debugging-lab/loss-floor with reduction='sum': Adam's steps drift a little from the mean's,
    # so the losses are 90 times the expected within 0.1% (90.05 here), not to float rounding; 90
    # is y's length.
    setup = "import torch\ny = torch.zeros(90)\nexpected = [1.2, 0.8, 0.5, 0.3]\n"
    code = "losses = [v * 90.05 for v in expected]\n"
    # The reference's losses are means (its loss function's default reduction), as there.
    reference = "losses = [float(torch.tensor([v]).mean()) for v in expected]\n"
    r = verify(code, reference, [check(kind="value", expr="losses")], setup=setup)
    text = "\n".join(r["mistakes"])
    assert "losses is 90 times the expected value, consistent with a sum where a mean over 90 values was meant" in text
    # A reference that takes no mean anywhere: a sum where a mean was meant has nothing to stand on.
    r = verify(code, "losses = list(expected)\n", [check(kind="value", expr="losses")], setup=setup)
    text = "\n".join(r["mistakes"])
    assert "a sum where a mean" not in text and "losses is 90.05 times the expected value" in text
    assert "exactly" not in text


@pytest.mark.parametrize(
    "code",
    [
        "out = x @ torch.ones(4, 3, dtype=torch.float64)\n",
        "w = torch.tensor([1.0, 1.0, 3.0], dtype=torch.float64)\n"
        "out = torch.nn.functional.cross_entropy(x[:, :3], torch.zeros(6, dtype=torch.long), weight=w)\n",
    ],
)
def test_tensors_of_two_dtypes_in_one_operation_are_named(code):
    text = said(code, "out = x[:, :3]\n")
    assert "tensors of different dtypes met in one operation" in text, text


def test_one_wrong_element_is_no_per_feature_scale():
    # views-strides/transpose-view with the write lost in a copy: one element differs, and a
    # single element "is" any factor of its expected value.
    import torch

    from tutor.checks import causes

    expected = torch.tensor([[0.0, 1.0], [99.0, 4.0], [2.0, 5.0]])
    actual = expected.clone()
    actual[1, 0] = 3.0
    assert causes.explain("t", actual, expected) is None


def test_slices_set_to_zero_are_no_per_feature_scale():
    # modules/mlp with a ReLU after the last layer: columns negative in every row become 0
    import torch

    from tutor.checks import causes

    expected = torch.tensor([[-1.0, 2.0, -3.0, -0.5], [-2.0, 1.5, -1.0, -0.25], [-0.5, 3.0, -2.0, -1.0]])
    said = causes.explain("out", expected.clamp(min=0), expected)
    assert said is None or "a factor that varies only along" not in said, said


def test_a_multiple_of_a_reduction_of_a_numpy_array_over_the_wrong_dim_is_named():
    # numpy-parity/grad-parity: db = 2 * R.sum(axis=0) / R.size, written with axis=1
    setup = "import numpy as np\nR = np.arange(32.0).reshape(16, 2) / 7\n"
    r = verify(
        "db = 2.0 * R.sum(axis=1) / R.size\n",
        "db = 2.0 * R.sum(axis=0) / R.size\n",
        [check(kind="tensor", expr="torch.as_tensor(db)")],
        setup="import torch\n" + setup,
    )
    text = "\n".join(r["mistakes"])
    assert "is 0.0625 * R.sum(dim=1) where the reference computes 0.0625 * R.sum(dim=0): sum over the wrong dim" in text


def test_a_change_made_the_other_way_from_a_value_in_play_is_named():
    # numpy-parity/sgd-step-parity with W + lr * dW for W - lr * dW
    setup = (
        "import torch\nimport numpy as np\nW = np.arange(6.0).reshape(3, 2) / 5\ndW = np.ones((3, 2)) * np.arange(2)\n"
    )
    r = verify(
        "W_next = W + 0.1 * dW\n",
        "W_next = W - 0.1 * dW\n",
        [check(kind="tensor", expr="torch.as_tensor(W_next)")],
        setup=setup,
    )
    text = "\n".join(r["mistakes"])
    assert "is W changed by the expected amount the other way" in text, text
