"""A cause read off the numbers alone says what it is consistent with, and names the other
ways learners get the same numbers, instead of asserting one mechanism the code may not have
(tutor/checks/causes.py). Each case is a bug whose numbers matched a pattern while the code
did something else: the old sentence named a cause that was not there."""

from __future__ import annotations

import torch

from tutor.checks import causes


def test_a_mask_reaching_one_place_too_far_is_not_only_a_late_start():
    lengths = torch.tensor([2, 3, 1])
    right = torch.arange(5) < lengths[:, None]
    wrong = torch.arange(5) <= lengths[:, None]  # the end is off by one, the start is right
    said = causes.explain("mask", wrong, right)
    assert said is not None and "consistent with an off-by-one" in said, said
    assert "one place too far" in said and "<= for <" in said, said


def test_a_reshape_to_a_column_is_not_blamed_on_keepdim_alone():
    t = torch.arange(6.0).reshape(2, 3)
    said = causes.reshaped("flat", t.reshape(-1, 1), t.reshape(-1))
    assert said is not None and "extra dim of size 1" in said, said
    assert "consistent with" in said and "reshape or view" in said, said
    dropped = causes.reshaped("out", t.sum(1), t.sum(1, keepdim=True))
    assert dropped is not None and "reshape or flatten" in dropped, dropped


def test_values_in_another_order_are_not_blamed_on_torch_roll_alone():
    g = torch.Generator().manual_seed(0)
    expected = torch.randn(8, generator=g)
    said = causes.explain("weight", torch.roll(expected, 3), expected)
    assert said is not None and "consistent with torch.roll" in said and "another order" in said, said


def test_a_negated_bias_is_a_wrong_term_not_only_a_missing_or_extra_one():
    g = torch.Generator().manual_seed(1)
    x, w, b = torch.randn(5, 4, generator=g), torch.randn(3, 4, generator=g), torch.tensor([0.1, 0.2, 0.3])
    said = causes.explain("out", x @ w.T - b, x @ w.T + b)
    assert said is not None and "missing, extra or wrong" in said and "consistent with" in said, said


def test_a_factor_is_only_consistent_with_a_scale():
    w = torch.tensor([1.0, -2.0, 0.5, 4.0])
    grad = 2 * w
    said = causes.explain("w", w + 0.1 * grad, w - 0.1 * grad)  # a sign error whose numbers are a ratio
    assert said is not None and said.startswith("w is 1.5 times the expected value"), said
    assert "consistent with a constant factor" in said, said


def test_a_ratio_near_a_whole_number_is_not_exactly_that_many_times():
    """in-place/saved-tensor with h + 2 for h * 2: the loss is 2.0017 times the expected one,
    which is no factor of 2 (the old tolerance, 1e-3 of k, called it "exactly 2 times")."""
    from tutor.checks import patterns

    g = torch.Generator().manual_seed(2)
    expected = torch.rand(6, generator=g) + 0.5
    assert patterns.scale("loss", expected * 2.0017, expected) is None
    exact = patterns.scale("loss", (expected * 2).to(torch.float32), expected.to(torch.float32))
    assert exact is not None and "exactly 2 times" in exact, exact
    assert patterns.scale("loss", expected / 3, expected) is not None


def test_values_in_reverse_order_may_be_parts_on_the_other_side():
    """tensors/follow-the-input with the column of ones on the left of a one-column x: the
    numbers are the flipped ones, and so are those of a part joined on the other side."""
    x = torch.tensor([[2.0], [5.0]])
    ones = torch.ones(2, 1)
    said = causes.explain("result", torch.cat([ones, x], dim=1), torch.cat([x, ones], dim=1))
    assert said is not None and "in reverse order along dim 1" in said, said
    assert "consistent with a flip, or with parts joined or padded on the other side" in said, said


def test_one_element_more_may_be_a_length_from_other_data():
    """data-loading/pad-collate padding to the dataset's longest sequence, not the batch's: one
    column more, which is no slice end off by one alone."""
    batch = torch.tensor([[1.0, 2.0, 0.0], [3.0, 4.0, 5.0]])
    padded = torch.cat([batch, torch.zeros(2, 1)], dim=1)
    said = causes.reshaped("padded", padded, batch)
    assert said is not None and "one element more at the end of dim 1" in said, said
    assert "consistent with a slice or window end off by one, or a length taken from other data" in said, said


def test_a_ratio_of_two_sizes_is_read_only_where_one_tensor_has_both():
    """training-loop/cross-entropy-contract divided by the number of classes (3) where the
    number of examples (4) was meant: the loss is exactly 4/3 of the expected one, and the
    logits are 4 x 3. Said only where one tensor holds both sizes; 3/2 (what a sign flipped
    in 1 +- c gives) is never read so."""
    from test_checks_support import check, verify

    from tutor.checks import patterns

    assert patterns.exact_fraction(4 / 3) == (4, 3)
    assert patterns.exact_fraction(1.5) is None and patterns.exact_fraction(2 / 3) is None
    assert patterns.exact_fraction(1.3334) is None
    setup = "import torch\nlogits = torch.randn(4, 3)\n"
    solution = "loss = -logits.log_softmax(1)[:, 0].sum() / logits.shape[0]\n"
    by_classes = "loss = -logits.log_softmax(1)[:, 0].sum() / logits.shape[1]\n"
    said = " ".join(verify(by_classes, solution, [check(kind="tensor", expr="loss")], setup=setup)["mistakes"])
    assert "consistent with a divisor 3 where 4 was meant" in said, said
    assert "4 and 3 are the sizes of logits's dimensions 0 and 1" in said, said
    # The same factor with no tensor of both sizes in play: the fact alone.
    other = "import torch\nlogits = torch.randn(5, 2)\n"
    res = verify(
        "loss = torch.tensor(4.4)\n", "loss = torch.tensor(3.3)\n", [check(kind="tensor", expr="loss")], setup=other
    )
    assert not any("was meant" in m for m in res["mistakes"]), res["mistakes"]


def test_a_function_working_along_the_other_dim_is_read_from_every_failing_case():
    """in-place/caller-tensor with statistics per row (dim=1) where per column were meant: the
    smallest failing case (2 x 1) shows only nan, yet each failing case is the reference's
    result for x transposed, transposed back. A sign error is no such thing."""
    from test_checks_support import check, verify

    spec = check(
        kind="function",
        name="standardize",
        args=[{"type": "tensor", "shape": ["n", "d"]}],
        dims={"n": [2, 6], "d": [1, 4]},
        cases=8,
    )
    solution = "def standardize(x):\n    return (x - x.mean(dim=0)) / x.std(dim=0)\n"
    per_row = "def standardize(x):\n    return (x - x.mean(dim=1, keepdim=True)) / x.std(dim=1, keepdim=True)\n"
    said = " ".join(verify(per_row, solution, [spec])["mistakes"])
    assert "returns the reference's result for x transposed, transposed back" in said, said
    assert "working along dim 1 of x where dim 0 was meant" in said, said
    sign = "def standardize(x):\n    return (x.mean(dim=0) - x) / x.std(dim=0)\n"
    said = " ".join(verify(sign, solution, [spec])["mistakes"])
    assert "transposed back" not in said, said


def test_differences_that_fill_one_end_of_a_flat_result_are_said_to():
    """linear-init/he-init skipping the last Linear: every parameter joined in one flat
    tensor, and all 2,570 differences are its last 2,570 elements. Scattered differences, or
    ones that touch neither end, say nothing of where."""
    from tutor.checks.compare import mismatch, mismatch_sentence

    expected = torch.arange(100.0)
    tail = expected.clone()
    tail[90:] += 1
    said = mismatch_sentence("params", mismatch(tail.numpy(), expected.numpy()))
    assert "the differences are all in the last 10 elements (from 90 on), the first 90 match" in said, said
    head = expected.clone()
    head[:5] -= 1
    said = mismatch_sentence("params", mismatch(head.numpy(), expected.numpy()))
    assert "the differences are all in the first 5 elements, the last 95 (from 5 on) match" in said, said
    scattered = expected.clone()
    scattered[::7] += 1
    said = mismatch_sentence("params", mismatch(scattered.numpy(), expected.numpy()))
    assert "the differences are all in" not in said, said
    middle = expected.clone()
    middle[40:50] += 1
    assert "the differences are all in" not in mismatch_sentence("params", mismatch(middle.numpy(), expected.numpy()))


def test_a_result_with_a_part_left_out_at_one_end_says_which_end():
    """compile/one-graph-all-sizes returning the outputs of batches[1:] only: 15 rows where 23
    were expected, the last 15 of them. A shorter result that is no slice of the expected
    one says nothing of ends."""
    expected = torch.arange(23 * 3, dtype=torch.float32).reshape(23, 3)
    said = causes.reshaped("outputs", expected[8:], expected)
    assert said is not None and "without its first 8 entries along dim 0" in said, said
    said = causes.reshaped("outputs", expected[:-4], expected)
    assert said is not None and "without its last 4 entries along dim 0" in said, said
    more = torch.cat([expected, expected[:2]])
    said = causes.reshaped("outputs", more, expected)
    assert said is not None and "with 2 more entries at the end of dim 0" in said, said
    assert causes.reshaped("outputs", expected[8:] + 1, expected) is None


def test_a_value_multiplied_element_by_element_by_a_tensor_in_play_says_which():
    x = torch.tensor([-2.0, 0.5, 1.5, 4.0], requires_grad=True)
    expected = (2 * x).detach()  # the gradient of (x ** 2).sum()
    sources = [("x", x), ("w", torch.tensor([1.0, 1.0, 1.0, 1.0]))]
    said = causes.multiplied("x.grad", (expected * x).detach().numpy(), expected.numpy(), sources)
    assert said is not None and "x.grad is the expected value times x, element by element" in said, said
    assert "backward(gradient=x) where the gradient of ones was meant" in said, said
    divided = causes.multiplied("out", (expected / x).detach().numpy(), expected.numpy(), sources)
    assert divided == "out is the expected value divided by x, element by element: consistent with a factor x missing"
    # A constant tensor is a factor (causes.explain reads it); two tensors that both fit
    # are two readings, so neither is said.
    assert causes.multiplied("out", (expected * 3).numpy(), expected.numpy(), [("c", torch.full((4,), 3.0))]) is None
    twins = [("x", x), ("x2", x.detach().clone())]
    assert causes.multiplied("out", (expected * x).detach().numpy(), expected.numpy(), twins) is None


def test_one_expected_number_is_not_read_as_a_reduction_of_a_tensor_in_play():
    # The largest of three values is their amax: a one-number result that happens to equal
    # it, against an expected number that happens to be an amax over a dim, says nothing.
    x = torch.tensor([[[0.7508], [-0.4554], [1.5726]]])
    said = causes.reduced("result", torch.tensor([[1.5726]]).numpy(), torch.tensor([[0.7508]]).numpy(), [("x", x)])
    assert said is None, said


def test_values_rounded_to_a_few_decimals_say_so():
    expected = torch.tensor([0.693147, 0.512345, 0.402981, 0.357712], dtype=torch.float64)
    said = causes.explain("history", expected.numpy().round(3), expected.numpy())
    assert said is not None and "history is the expected value rounded to 3 decimals" in said, said
    values = torch.tensor([2.7, 3.2, 5.9, 7.4])
    cut = causes.explain("counts", values.trunc().numpy(), values.numpy())
    assert cut is not None and "fractional part dropped" in cut, cut
    # two values near ±0.7 read as ±1 are no rounding (a std of 1 where n - 1 was meant)
    said = causes.explain("result", torch.tensor([1.0, -1.0]).numpy(), torch.tensor([0.7071, -0.7071]).numpy())
    assert said is None or "rounded" not in said, said


def test_a_number_that_is_another_formats_limit_says_which():
    from tutor.checks import patterns

    said = patterns.dtype_constant("f16_max", 32767.0, 65504.0)
    assert said == "f16_max is torch.iinfo(torch.int16).max, where torch.finfo(torch.float16).max was expected"
    # the same format's other limit is not "another format's"
    tiny = float(torch.finfo(torch.float16).tiny)
    said = patterns.dtype_constant("f16_max", tiny, 65504.0)
    assert said == "f16_max is torch.finfo(torch.float16).tiny, where torch.finfo(torch.float16).max was expected"
    # only where the expected number is a format's limit too, and one format's limit is meant
    assert patterns.dtype_constant("n", 32767.0, 12.0) is None
    assert patterns.dtype_constant("m", 1.0, 65504.0) is None


def test_the_expected_values_in_another_order_are_said_to_be_so():
    expected = torch.tensor([0.3, -1.2, 0.8, 2.5, -0.4, 1.1])
    shuffled = expected[torch.tensor([1, 0, 2, 4, 3, 5])]
    said = causes.explain("grads", shuffled.numpy(), expected.numpy())
    assert said is not None and "holds the expected values, each as often, in another order" in said, said
    # a few values repeated (0s and 1s) have too little order to read
    assert causes.explain("mask", torch.tensor([0.0, 0, 1, 1]).numpy(), torch.tensor([0.0, 1, 0, 1]).numpy()) is None
