"""Readings of a wrong value that no cheap transformation of the expected one reproduced
(issue 23): one value in every entry and which statistic it is, values of one sign or
outside the expected values' range, an affine map of the expected values, pieces joined in
another order, a result at bfloat16 precision, a history that rises where the expected one
falls, nan from one step on. Each on real torch values of the bug, and absent on near-misses:
the right value, and wrong values of the same kind that the reading must not describe."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from tutor.checks import causes, compare, spans


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().double().numpy()


def said(name, actual, expected, sources=(), tol=None) -> str | None:
    """What the values chain says after patterns.py: the transformations, then the wholes."""
    a, e = _np(actual), _np(expected)
    return causes.explain(name, a, e, tol) or spans.spread(name, a, e, sources, tol)


def pixels() -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    return torch.rand(300, 64, generator=g) * torch.linspace(0, 16, 64)


# ---------------------------------------------------------------- one value everywhere


def test_one_global_mean_where_one_per_feature_was_meant_is_named_with_its_statistic():
    x = pixels()
    mean = torch.full((64,), x.mean().item())  # fill_(x.mean().item())
    text = said("norm.mean", mean, x.mean(dim=0), [("X_train", x)])
    assert text is not None and text.startswith("norm.mean holds the same value, 4.006, in all 64"), text
    assert "in all 64 entries, where the expected entries differ" in text, text
    assert "is the mean of the expected values, consistent with one statistic over every element" in text, text
    assert causes.topic(text) == "cause:constant"


def test_a_global_std_is_named_as_the_source_s_statistic():
    x = pixels()
    std = torch.full((64,), x.std(unbiased=False).item())
    text = said("norm.std", std, x.std(dim=0, unbiased=False).clamp(min=1.0), [("X_train", x)])
    assert text is not None and "is X_train.std(unbiased=False), consistent with one statistic" in text, text


def test_a_constant_that_is_no_statistic_is_said_as_a_fact_only():
    x = pixels()
    text = said("norm.mean", torch.full((64,), 2.5), x.mean(dim=0), [("X_train", x)])
    assert text is not None and "holds the same value, 2.5, in all 64 entries" in text, text
    assert "consistent with" not in text, text


@pytest.mark.parametrize(
    "actual",
    [
        pytest.param(lambda x: x.mean(dim=0), id="right"),
        pytest.param(lambda x: x.mean(dim=0) + torch.randn(64, generator=torch.Generator().manual_seed(1)), id="noisy"),
        pytest.param(lambda x: torch.zeros(64), id="never-filled"),
    ],
)
def test_no_constant_reading_where_the_value_is_right_varies_or_was_never_written(actual):
    x = pixels()
    text = said("norm.mean", actual(x), x.mean(dim=0), [("X_train", x)]) or ""
    assert "holds the same value" not in text and "one statistic" not in text, text


def test_uniform_probabilities_are_not_called_a_statistic():
    probs = torch.softmax(torch.randn(8, generator=torch.Generator().manual_seed(2)), dim=0)
    text = said("p", torch.full((8,), 1 / 8), probs) or ""
    assert "one statistic" not in text, text


def test_one_value_per_row_where_the_expected_rows_vary_is_said_with_their_mean():
    x = torch.randn(5, 6, generator=torch.Generator().manual_seed(3))
    text = said("out", x.mean(dim=1, keepdim=True).expand(5, 6), x)
    assert text is not None and "out holds one value in each slice along dim 1" in text, text
    assert "each the mean of the expected values along dim 1" in text, text
    assert "one value in each slice" not in (said("out", x.roll(1, dims=1) * 1.5, x) or "")


# ---------------------------------------------------------------- sign and range


def draws(seed: int, how: str, n_in: int = 20, n_out: int = 7) -> torch.Tensor:
    """The weight and bias of a Linear(n_in, n_out), flattened, drawn as ``how`` says."""
    bound = 1 / math.sqrt(n_in)
    torch.manual_seed(seed)
    w, b = torch.empty(n_out, n_in), torch.empty(n_out)
    for t in (w, b):
        if how == "uniform":
            nn.init.uniform_(t, -bound, bound)
        elif how == "lower-zero":
            nn.init.uniform_(t, 0, bound)
        else:
            nn.init.normal_(t, 0.0, bound)
    return torch.cat([w.flatten(), b])


def test_draws_from_a_range_that_starts_at_zero_with_the_same_seed_are_an_affine_map():
    text = said("w", draws(0, "lower-zero"), draws(0, "uniform"))
    assert text is not None and text.startswith("w is 0.5 times the expected value plus 0.1118"), text
    assert "both scaled and shifted" in text and causes.topic(text) == "cause:affine", text


def test_draws_from_a_range_that_starts_at_zero_with_other_numbers_are_all_of_one_sign():
    text = said("w", draws(1, "lower-zero"), draws(0, "uniform"))
    assert text is not None and text.startswith("every value of w is >= 0"), text
    assert "where the expected values take both signs, from -0.22" in text, text
    assert causes.topic(text) == "cause:sign-support"


def test_normal_draws_where_uniform_ones_were_meant_lie_outside_the_expected_range():
    text = said("w", draws(0, "normal"), draws(0, "uniform"))
    assert text is not None and "of 147 values of w lie outside the expected values' range, -0.2" in text, text
    assert causes.topic(text) == "cause:range"
    assert "normal_" not in text  # what is established, not a guessed API


@pytest.mark.parametrize("seed", range(1, 41))
def test_draws_of_the_same_distribution_with_another_seed_get_no_range_or_sign_reading(seed):
    assert said("w", draws(seed, "uniform"), draws(0, "uniform")) is None
    assert said("w", draws(seed, "uniform", 4, 100), draws(0, "uniform", 4, 100)) is None


def test_a_single_negative_expected_value_is_not_a_sign_the_expected_values_take():
    e = torch.linspace(-0.1, 3.0, 12)
    a = e.abs() + torch.linspace(0, 1, 12) ** 2
    assert "both signs" not in (said("x", a, e) or "")


# ---------------------------------------------------------------- pieces in another order


def grads_of(model: nn.Module, x: torch.Tensor, order) -> torch.Tensor:
    model.zero_grad()
    model(x).square().mean().backward()
    return torch.cat([p.grad.flatten() for p in order(model)])


def test_gradients_listed_in_sorted_name_order_are_blocks_in_another_order():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 2))
    x = torch.randn(7, 5)
    expected = grads_of(model, x, lambda m: list(m.parameters()))
    mine = grads_of(model, x, lambda m: [p for _, p in sorted(m.named_parameters())])
    text = said("grads", mine, expected)
    assert text is not None and "grads is the expected value in 4 blocks joined in another order" in text, text
    assert "(of 8, 40, 2, 16 elements): [0:8] is the expected [40:48], [8:48] is the expected [0:40]" in text, text


def test_elements_shuffled_one_by_one_are_not_called_blocks():
    expected = torch.randn(30, generator=torch.Generator().manual_seed(4))
    shuffled = expected[torch.randperm(30, generator=torch.Generator().manual_seed(5))]
    text = said("v", shuffled, expected)
    assert text is not None and "blocks joined" not in text and "each as often, in another order" in text, text
    rolled = said("v", expected.roll(7), expected)
    assert rolled is not None and "blocks joined" not in rolled and "wrapping round" in rolled, rolled


# ---------------------------------------------------------------- precision


def embeddings() -> torch.Tensor:
    return torch.randn(11, 8, generator=torch.Generator().manual_seed(6))


def test_a_product_computed_in_bfloat16_and_cast_up_is_named():
    emb = embeddings()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        sim = emb @ emb.T
    text = said("sim", sim.float(), emb @ emb.T, tol=(1e-5, 1e-8))
    assert text is not None and text.startswith("every value of sim is representable in bfloat16"), text
    assert causes.topic(text) == "cause:precision"


@pytest.mark.parametrize(
    "actual",
    [
        pytest.param(lambda e: e @ e.T + 1e-3, id="float32-off"),
        pytest.param(lambda e: (e @ e.T).double() @ torch.eye(11, dtype=torch.float64), id="float64"),
        pytest.param(lambda e: (e @ e.T).round(), id="whole-numbers"),
        pytest.param(lambda e: (e @ e.T * 4).round() / 4, id="quarters"),
    ],
)
def test_values_at_full_precision_or_of_few_bits_are_not_called_bfloat16(actual):
    emb = embeddings()
    text = said("sim", actual(emb), emb @ emb.T, tol=(1e-5, 1e-8)) or ""
    assert "bfloat16" not in text and "float16" not in text, text


# ---------------------------------------------------------------- a history's direction


def history(sign: float, lr: float = 0.1) -> list[float]:
    g = torch.Generator().manual_seed(7)
    w = torch.zeros(3, requires_grad=True)
    xs = [torch.randn(32, 3, generator=g) for _ in range(6)]
    batches = [(xb, xb @ torch.tensor([1.0, -2.0, 0.5])) for xb in xs]
    out = []
    for xb, yb in batches:
        loss = ((xb @ w - yb) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w -= sign * lr * w.grad
        w.grad = None
        out.append(loss.item())
    return out


def test_a_loss_history_of_gradient_ascent_rises_where_the_expected_falls():
    a, e = np.array(history(-1.0)), np.array(history(1.0))
    text = causes.explain("history", a, e)
    assert text is not None and text.startswith("history starts at the expected first value"), text
    assert "then rises" in text and "where the expected falls" in text, text
    assert "consistent with steps that move it the wrong way" in text, text


def test_a_history_that_falls_where_the_expected_rises_is_said_without_a_mechanism():
    # mixed-precision/scaled-step with no zero_grad: the scaler's scale falls (accumulated
    # gradients overflow) where the expected grows; no update of the learner's moves it
    e = np.array([256.0, 512.0, 256.0, 256.0, 512.0])
    a = np.array([256.0, 512.0, 256.0, 128.0, 64.0])
    text = causes.explain("scale", a, e)
    assert text is not None and "then falls (to 64 at the end) where the expected rises (to 512)" in text, text
    assert "consistent with" not in text and "sign flipped" not in text, text


def test_a_history_that_falls_too_or_starts_elsewhere_gets_no_direction():
    e = np.array(history(1.0))
    slower = causes.explain("history", np.array(history(1.0, lr=0.05)), e) or ""
    assert "where the expected" not in slower, slower
    elsewhere = causes.explain("history", np.array(history(-1.0)) + 1.0, e) or ""
    assert "starts at the expected first value" not in elsewhere, elsewhere


# ---------------------------------------------------------------- nan from one step on


def trajectory(bad: bool) -> torch.Tensor:
    """Five steps of Adam's bias correction on 6 weights: 1 - beta2 * t goes negative at t = 2."""
    g = torch.Generator().manual_seed(8)
    w, m, v, beta1, beta2 = torch.randn(6, generator=g), torch.zeros(6), torch.zeros(6), 0.9, 0.6
    rows = []
    for t in range(1, 6):
        grad = w.clone()
        m = beta1 * m + (1 - beta1) * grad
        v = beta2 * v + (1 - beta2) * grad**2
        c2 = 1 - (beta2 * t if bad else beta2**t)
        w = w - 0.1 * (m / (1 - beta1**t)) / (torch.sqrt(v / c2) + 1e-8)
        rows.append(w.clone())
    return torch.stack(rows)


def test_nan_from_one_step_on_is_named_with_that_step():
    text = spans.spread("steps", _np(trajectory(True)), _np(trajectory(False)))
    assert text is not None and text.startswith("steps is nan everywhere from index 1 of dim 0 on (24 of 30 values)"), (
        text
    )
    assert "the values before it match the expected ones" in text and causes.topic(text) == "cause:nan-onset", text


def test_scattered_or_total_nan_gets_no_onset():
    e = trajectory(False)
    scattered = e.clone()
    scattered[1, 2] = scattered[3, 0] = float("nan")
    assert spans.nan_onset("steps", _np(scattered), _np(e)) is None
    assert spans.nan_onset("steps", _np(torch.full_like(e, float("nan"))), _np(e)) is None
    assert spans.nan_onset("steps", _np(e), _np(e)) is None


# ---------------------------------------------------------------- through the comparison


def test_the_values_comparison_says_the_constant_with_the_reference_s_tensors():
    x = pixels()
    problems = compare.tensor_problems(
        torch.full((64,), x.std(unbiased=False).item()),
        x.std(dim=0, unbiased=False).clamp(min=1.0),
        "norm.std",
        ("values",),
        sources=[("X_train", x)],
    )
    assert "is X_train.std(unbiased=False)" in problems[0].data["pattern"], problems[0].data
    right = compare.tensor_problems(x.mean(dim=0), x.mean(dim=0), "norm.mean", ("values",), sources=[("X_train", x)])
    assert right == []


def test_a_list_of_floats_is_read_too():
    problems = compare.value_problems(history(-1.0), history(1.0), "history")
    assert "rises" in problems[0].data["pattern"], problems[0].data


# ---------------------------------------------------------------- a clamp at another bound


def stds() -> torch.Tensor:
    return pixels()[:, ::4].std(dim=0, unbiased=False) * torch.linspace(0.0, 1.0, 16)


def test_a_floor_of_one_missing_is_named_with_its_bound():
    s = stds()
    text = said("norm.std", s.clamp(min=1e-6), s.clamp(min=1.0))
    assert text is not None and text.startswith("norm.std has 8 entries below 1 where the expected value is 1"), text
    assert "(expected == norm.std.clamp(min=1))" in text and causes.topic(text) == "cause:clamped", text


def test_a_clamp_where_none_belongs_is_named_and_a_lone_changed_entry_is_not():
    s = stds()
    text = said("p", s.clamp(max=2.0), s)
    assert text is not None and "(p == expected.clamp(max=2))" in text, text
    one = s.clone()
    one[3] = s.min() - 1.0  # one entry below the least expected value: no floor shows in it
    assert "clamp" not in (said("p", one, s) or "")


# A factor along one dim that is a simple function of a tensor in play: the missing square
# root of a batch norm's running variance, named; a factor of no tensor in play, not.
def _eval_batchnorm(x, rm, rv, root=True):
    return (x - rm) / (torch.sqrt(rv + 1e-5) if root else rv + 1e-5)


def test_a_factor_along_a_dim_is_named_by_the_tensor_it_comes_from():
    from tutor.checks.context import Context

    torch.manual_seed(0)
    x = torch.randn(8, 3) * torch.tensor([1.0, 3.0, 0.5]) + 2
    rm, rv = 0.1 * x.mean(0), 0.9 + 0.1 * x.var(0)
    expected, actual = _eval_batchnorm(x, rm, rv), _eval_batchnorm(x, rm, rv, root=False)
    ctx = Context({"x": x, "rm": rm, "rv": rv}, {"x": x, "rm": rm, "rv": rv}, torch.device("cpu"), 0)
    reading = ctx._read_factor(causes.explain("y_eval", _np(actual), _np(expected)), ())
    assert "which is 1/sqrt(rv) element by element: consistent with a division by rv where its square root" in reading
    # No normalisation at all: the factor is sqrt(rv + eps), read as the division left out.
    reading = ctx._read_factor(causes.explain("y_eval", _np(x - rm), _np(expected)), ())
    assert "which is sqrt(rv) element by element" in reading and "left out" in reading
    # A per-feature factor that no tensor in play gives keeps the plain reading.
    gain = torch.tensor([0.7, 1.9, 1.3])
    reading = ctx._read_factor(causes.explain("y_eval", _np(expected * gain), _np(expected)), ())
    assert reading.startswith("y_eval is the expected value times a factor that varies only along dim 1")
    assert "element by element" not in reading


@pytest.mark.parametrize("seed", range(10))
def test_a_factor_is_not_named_by_a_tensor_it_only_resembles(seed):
    # Factors and tensors drawn apart: no reading may call one a function of the other.
    g = np.random.default_rng(seed)
    factor = g.uniform(0.5, 2.0, 5)
    candidates = [(f"t{i}", g.uniform(0.1, 4.0, 5)) for i in range(6)]
    assert causes.factor_is("f", factor, candidates) is None
    # Alike values everywhere are one factor, not a per-feature one.
    assert causes.factor_is("f", np.full(5, 2.0), [("t", np.full(5, 4.0))]) is None


# ---------------------------------------------------------------- zeros everywhere


def test_zeros_everywhere_are_said_as_that_and_read_as_no_transformation():
    from tutor.checks.compare import tensor_problems

    # float16 gradients that underflowed to 0 against tiny expected ones: 0 is within
    # tolerance of their squares, which is no square missing
    tiny = torch.tensor([-1.9e-08, 8.5e-08, -1.27e-07, 3.1e-08, 5.5e-08, -2.2e-08])
    # a gradient that never flowed against signed values: of one sign, but no abs or square
    signed = torch.tensor([-3.4, 1.1, 0.5, -0.2, 2.0, -1.0, 0.7, -0.6, 1.5])
    for expected in (tiny, signed, torch.full((5,), 2.0)):
        (problem,) = tensor_problems(torch.zeros_like(expected), expected, "g", ["values"])
        said = str(problem.data.get("pattern"))
        assert said.startswith("g is 0 at every element, where "), said
        assert "consistent with" not in said, said
    (problem,) = tensor_problems(torch.zeros(5), torch.full((5,), 2.0), "g", ["values"])
    assert str(problem.data["pattern"]) == "g is 0 at every element, where every expected value is 2"
    # a few values: the check's own line shows each of them, and nothing is added
    (problem,) = tensor_problems(torch.zeros(3), torch.full((3,), 2.0), "counts", ["values"])
    assert "0 at every element" not in str(problem.data.get("pattern")), problem.data


def test_a_constant_term_on_an_arange_like_value_is_also_a_window_some_places_off():
    # views-strides/clone-window with signal[-8:-4] on a 12-element variant signal that steps
    # by 3: two places late reads as "plus 6", which the code never added
    expected = np.array([-4.0, -1.0, 2.0, 5.0])
    text = causes.explain("window", expected + 6, expected)
    assert text is not None and text.startswith("window is the expected value plus 6 everywhere; along dim 0"), text
    assert "also the values 2 places further along" in text and "starts 2 places late" in text, text
    back = causes.explain("window", expected - 6, expected)  # one place off is _window's own reading
    assert back is not None and "2 places further back" in back and "starts 2 places early" in back, back
    # values that do not step evenly: the constant term alone
    uneven = np.array([0.3, -1.2, 2.5, 0.9])
    assert causes.explain("out", uneven + 1.5, uneven).endswith(
        "consistent with a constant term added where none belongs (or one missing)"
    )


def test_two_slices_that_differ_alike_are_no_bias():
    # reading-transformers/attention returning the weights on a 2 x 2 case: its two rows
    # happened to differ from the expected ones by the same [1.987, 0.4521]: two values beyond
    # the term's own two are too few to establish it as a bias
    e = np.array([[[[-0.987, -0.4521], [-1.987, 0.5479]]]])
    a = e + np.array([1.987, 0.4521])
    text = causes.explain("result", a, e) or ""
    assert "like a bias" not in text, text
    rows = np.arange(12.0).reshape(3, 4) * 0.37 - 1.0
    assert "like a bias" in (causes.explain("out", rows + np.array([0.5, -1.0, 2.0, 0.25]), rows) or "")
    # two rows of three outputs, a bias left out (linear-init/port-weights): established
    two = np.array([[0.3, -1.2, 0.8], [1.1, 0.4, -0.6]])
    assert "like a bias" in (causes.explain("out", two - np.array([0.05, -0.37, -0.41]), two) or "")


def test_a_few_zeros_get_no_reading_either():
    # memory-levers/checkpoint-blocks counting each block's forwards: [0, 0, 0] where [2, 2, 2]
    # was expected is no constant term of -2
    assert causes.explain("counts", np.zeros(3), np.full(3, 2.0)) is None
    assert spans.spread("counts", np.zeros(3), np.full(3, 2.0)) is None
