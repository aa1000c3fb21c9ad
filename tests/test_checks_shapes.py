"""Values of different shapes never match (tensor and function checks), unless the author
asks for broadcasting; a function's dtype hint follows its input."""

from test_checks_support import check, only, verify


def test_tensor_check_without_shape_fails_a_tensor_of_another_shape():
    c = check(kind="tensor", expr="t", compare=["dtype", "values"])
    r = verify("t = torch.tensor([99.])", "t = torch.zeros(2, 3) + 99", [c])
    assert not r["passed"]
    assert "t has shape (1,), expected (2, 3): its values cannot match the expected ones" in only(r)["message"]
    assert verify("t = torch.zeros(2, 3) + 99", "t = torch.zeros(2, 3) + 99", [c])["passed"]


def test_tensor_check_with_broadcast_compares_after_broadcasting():
    c = check(kind="tensor", expr="t", compare=["values"], broadcast=True)
    assert verify("t = torch.tensor([99.])", "t = torch.zeros(2, 3) + 99", [c])["passed"]
    r = verify("t = torch.tensor([98.])", "t = torch.zeros(2, 3) + 99", [c])
    assert not r["passed"] and "differs from the expected values" in only(r)["message"]
    r = verify("t = torch.zeros(4)", "t = torch.zeros(2, 3)", [c])
    assert "t has shape (4,), which does not broadcast against the expected (2, 3)" in only(r)["message"]


def test_function_check_without_shape_fails_returning_an_input():
    c = check(
        kind="function",
        name="outer",
        args=[{"type": "tensor", "shape": ["n"]}, {"type": "tensor", "shape": ["m"]}],
        dims={"n": [2, 4], "m": [2, 4]},
        compare=["dtype", "values"],
        cases=5,
        devices=["cpu"],
    )
    solution = "def outer(a, b):\n    return a[:, None] * b[None, :]\n"
    r = verify("def outer(a, b):\n    return a\n", solution, [c])
    assert not r["passed"]
    assert "its values cannot match the expected ones" in only(r)["message"]
    assert verify(solution, solution, [c])["passed"]


def test_function_dtype_hint_follows_the_input():
    c = check(
        kind="function",
        name="double",
        args=[{"type": "tensor", "shape": [3], "dtypes": ["float16"]}],
        cases=3,
        devices=["cpu"],
    )
    r = verify("def double(x):\n    return torch.zeros(3) + 2 * x.float()\n", "def double(x):\n    return 2 * x\n", [c])
    message = only(r)["message"]
    # x.float() casts: the sentence names what must follow x, not that a tensor was made without dtype=.
    assert "result has dtype torch.float32, expected torch.float16: the expected dtype is x's: " in message
    assert "tensors your code creates or casts must follow it (dtype=x.dtype" in message
    assert "pass dtype=torch.float16 when creating it" not in message


def test_a_cast_result_is_told_by_its_dtype_alone_and_a_wrong_value_still_shows():
    """Values that are the expected ones rounded to the learner's dtype are the dtype problem,
    not a second one; a value wrong beyond that precision is still reported."""
    c = check(
        kind="function",
        name="double",
        args=[{"type": "tensor", "shape": [3], "dtypes": ["float64"]}],
        cases=3,
        devices=["cpu"],
    )
    ref = "def double(x):\n    return 2 * x\n"
    message = only(verify("def double(x):\n    return (2 * x).float()\n", ref, [c]))["message"]
    assert "result has dtype torch.float32, expected torch.float64" in message
    assert "differs from the expected values" not in message
    message = only(verify("def double(x):\n    return (2 * x + 0.01).float()\n", ref, [c]))["message"]
    assert "result has dtype torch.float32, expected torch.float64" in message
    assert "differs from the expected values" in message
