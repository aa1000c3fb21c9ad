"""A dim that makes the learner's failing line run (tutor/checks/wrongdim.py): worked out on
meta tensors of the shapes the line's tensors had when it raised, said only where the line
raises on those shapes too, exactly one dim of one place makes it run, and the reference
uses that dim (and not the learner's) for the same call. Real torch; the end-to-end tests
go through the judge with both roles in this process."""

from __future__ import annotations

import time

import pytest
from test_checks_support import check, verify

from tutor.checks import wrongdim

MISMATCH = "The size of tensor a (2) must match the size of tensor b (200) at non-singleton dimension 0"


def _data(line: int, source: str, **shapes) -> dict:
    tensors = [[name, list(shape), dtype, "cpu"] for name, (shape, dtype) in shapes.items()]
    return {"line": line, "source": source, "tensors": tensors, "buffers": []}


EVALUATE = "def evaluate(logits, y):\n    return (logits.argmax(dim={d}) == y).float().mean().item()\n"
ATTENTION = "import math\ndef scores(q, k):\n    d = q.shape[-1]\n    return q @ k.transpose({a}) / math.sqrt(d)\n"


def test_a_reduction_over_the_wrong_dim_is_named_with_the_dim_that_runs():
    data = _data(2, "", logits=((200, 2), "float32"), y=((200,), "int64"))
    said = wrongdim.sentence(data, MISMATCH, EVALUATE.format(d=0), EVALUATE.format(d=1))
    assert said == (
        "line 2 runs on these same shapes with `logits.argmax(dim=1)` in place of `logits.argmax(dim=0)`: "
        "consistent with the wrong dim there"
    )


MODEL_EVALUATE = "def evaluate(model, X, y):\n    return (model(X).argmax(dim={d}) == y).float().mean().item()\n"


def test_a_reduction_of_a_modules_output_is_named_with_the_output_the_errors_sizes_give():
    # model(X) is not worked out (a module: its code is not run here). Taken to give one row
    # of K values per row of X, exactly one K among the error's sizes raises that error again.
    data = _data(2, "", X=((200, 4), "float32"), y=((200,), "int64"))
    said = wrongdim.sentence(data, MISMATCH, MODEL_EVALUATE.format(d=0), MODEL_EVALUATE.format(d=1))
    assert said == (
        "line 2 runs on these same shapes (with model(X) giving 2 values for each of its input's rows, as the error's "
        "sizes say) with "
        "`model(X).argmax(dim=1)` in place of `model(X).argmax(dim=0)`: consistent with the wrong dim there"
    )
    # sizes that no output of X's rows gives again: nothing is said
    other = "The size of tensor a (3) must match the size of tensor b (7) at non-singleton dimension 0"
    assert wrongdim.sentence(data, other, MODEL_EVALUATE.format(d=0), MODEL_EVALUATE.format(d=1)) is None
    # two calls whose results are not known: which one to take is not read
    two = "def evaluate(model, X, y):\n    return (model(X).argmax(dim=0) == model(y)).float().mean().item()\n"
    assert wrongdim.sentence(data, MISMATCH, two, MODEL_EVALUATE.format(d=1)) is None


def test_a_transpose_of_the_wrong_dims_is_named_with_the_pair_that_runs():
    data = _data(4, "", q=((1, 3, 2, 4), "float32"), k=((1, 3, 2, 4), "float32"))
    message = "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 1"
    said = wrongdim.sentence(data, message, ATTENTION.format(a="1, 2"), ATTENTION.format(a="-2, -1"))
    assert said is not None and "`k.transpose(3, 2)` in place of `k.transpose(1, 2)`" in said


def test_a_size_read_from_the_wrong_dim_is_named():
    code = "import torch\ndef add(x):\n    return torch.cat([x, torch.ones(x.shape[1], 1)], dim=1)\n"
    solution = code.replace("x.shape[1]", "x.shape[0]")
    data = _data(3, "", x=((5, 3), "float32"))
    said = wrongdim.sentence(data, "Sizes of tensors must match except in dimension 1", code, solution)
    assert said is not None and "`x.shape[0]` in place of `x.shape[1]`" in said
    assert "a size taken from the wrong dim" in said


def test_a_size_from_the_wrong_dim_on_the_line_that_made_a_tensor_of_the_failing_line_is_named():
    # The line that raises (the cat) is the reference's own; the column of ones it joins was
    # made one line earlier with x.shape[1] rows. That line, worked out again from x, gives
    # the ones the failing line held, and with x.shape[0] the cat runs.
    code = "import torch\ndef add(x):\n    ones = torch.ones(x.shape[1], 1)\n    return torch.cat([x, ones], dim=1)\n"
    solution = (
        "import torch\ndef add(x):\n    ones = x.new_ones(x.shape[0], 1)\n    return torch.cat([x, ones], dim=1)\n"
    )
    data = _data(4, "", x=((5, 1), "float32"), ones=((1, 1), "float32"))
    said = wrongdim.sentence(data, "Sizes of tensors must match except in dimension 1", code, solution)
    assert said == (
        "line 4 runs on these same shapes with `x.shape[0]` in place of `x.shape[1]` at line 3: "
        "consistent with a size taken from the wrong dim there"
    )
    # the reference reads shape[0] of another tensor only: it says nothing of x's
    other = solution.replace("x.new_ones(x.shape[0], 1)", "x.new_ones(len(x), 1)\n    n = y.shape[0]")
    assert wrongdim.sentence(data, "Sizes of tensors must match except in dimension 1", code, other) is None
    # ones bound twice in the function: which binding made it is not read
    twice = code.replace("    return", "    ones = ones * 1\n    return")
    data = _data(5, "", x=((5, 1), "float32"), ones=((1, 1), "float32"))
    assert wrongdim.sentence(data, "Sizes of tensors must match except in dimension 1", twice, solution) is None


@pytest.mark.parametrize(
    "code, solution, shapes, message",
    [
        # The dim is the reference's own: the shapes came wrong from elsewhere (an earlier line).
        (
            "import torch\ndef add(x, ones):\n    return torch.cat([x, ones], dim=1)\n",
            "import torch\ndef add(x, ones):\n    return torch.cat([x, ones], dim=1)\n",
            {"x": ((5, 1), "float32"), "ones": ((1, 1), "float32")},
            "Sizes of tensors must match except in dimension 1",
        ),
        # The reference never calls argmax: nothing says how it reads the dims.
        (
            EVALUATE.format(d=0),
            "def evaluate(logits, y):\n    return (logits.max(1).indices == y).float().mean().item()\n",
            {"logits": ((200, 2), "float32"), "y": ((200,), "int64")},
            MISMATCH,
        ),
        # y has the wrong length: with dim=0 the line runs, but the reference reduces over dim 1.
        (
            EVALUATE.format(d=1),
            EVALUATE.format(d=1),
            {"logits": ((200, 2), "float32"), "y": ((2,), "int64")},
            MISMATCH,
        ),
        # Not a shape error: no dim is said to fix it.
        (EVALUATE.format(d=0), EVALUATE.format(d=1), {"logits": ((200, 2), "float32"), "y": ((200,), "int64")}, "boom"),
        # On these shapes the line runs: its error was not the shapes'.
        (
            EVALUATE.format(d=1),
            EVALUATE.format(d=0),
            {"logits": ((200, 2), "float32"), "y": ((200,), "int64")},
            MISMATCH,
        ),
    ],
    ids=["the-reference-uses-that-dim", "no-such-call-in-the-reference", "another-name-is-wrong", "not-shapes", "runs"],
)
def test_no_dim_is_said_where_it_is_not_established(code, solution, shapes, message):
    data = _data(2 if code.startswith("def") else 3, "", **shapes)
    assert wrongdim.sentence(data, message, code, solution) is None


def test_two_places_that_could_each_be_the_fix_are_not_told_apart():
    # x is (5, 1): a cat over dim 0 runs, and so does a column of x.shape[0] ones.
    code = "import torch\ndef add(x):\n    return torch.cat([x, torch.ones(x.shape[1], 1)], dim=1)\n"
    solution = "import torch\ndef add(x):\n    return torch.cat([x, torch.ones(x.shape[0], 1)], dim=0)\n"
    data = _data(3, "", x=((5, 1), "float32"))
    assert wrongdim.sentence(data, "Sizes of tensors must match except in dimension 1", code, solution) is None


@pytest.mark.parametrize(
    "line",
    [
        "return (logits.argmax(dim=0) == y) + 10 ** 10 ** 9",
        "return (logits.argmax(dim=0) == y) + len('x' * 10 ** 12)",
        "return (logits.argmax(dim=0) == y) + __import__('os').getpid()",
        "return (logits.argmax(dim=0) == y) + (lambda: 1)()",
    ],
)
def test_a_hostile_line_is_not_run_and_takes_no_time(line):
    # Nothing of the learner's runs here: what the interpreter does not know it does not do.
    code = f"def evaluate(logits, y):\n    {line}\n"
    data = _data(2, "", logits=((200, 2), "float32"), y=((200,), "int64"))
    started = time.process_time()
    wrongdim.sentence(data, MISMATCH, code, EVALUATE.format(d=1))
    assert time.process_time() - started < 5  # a bound far above the few ms it takes, far below a power's years


def test_the_judge_names_the_wrong_dim_of_the_codes_own_line():
    setup = "import torch\nlogits = torch.randn(200, 2)\ny = torch.randint(0, 2, (200,))\n"
    solution = "acc = (logits.argmax(dim=1) == y).float().mean()\n"
    code = "acc = (logits.argmax(dim=0) == y).float().mean()\n"
    r = verify(code, solution, [check(kind="value", expr="float(acc)")], setup=setup)
    assert not r["passed"]
    assert any("`logits.argmax(dim=1)` in place of `logits.argmax(dim=0)`" in m for m in r["mistakes"]), r["mistakes"]


def test_the_judge_names_the_wrong_dims_inside_a_function_the_checks_call():
    solution = "import torch\n\ndef scores(q, k):\n    return q @ k.transpose(-2, -1)\n"
    code = "import torch\n\ndef scores(q, k):\n    return q @ k.transpose(1, 2)\n"
    fn = check(
        kind="function",
        name="scores",
        args=[
            {"type": "tensor", "shape": [1, "h", "t", "d"], "dtypes": ["float32"]},
            {"type": "tensor", "shape": [1, "h", "t", "d"], "dtypes": ["float32"]},
        ],
        dims={"h": [3, 3], "t": [2, 2], "d": [4, 4]},
        cases=2,
    )
    r = verify(code, solution, [fn])
    assert not r["passed"]
    assert any("`k.transpose(3, 2)` in place of `k.transpose(1, 2)`" in m for m in r["mistakes"]), r["mistakes"]
