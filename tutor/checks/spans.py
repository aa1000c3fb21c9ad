"""What a wrong value is as a whole, where no transformation of the expected value
reproduces it (causes.explain found none): one value in every entry where the expected
entries differ, and which statistic it is; values of one sign where the expected take both;
values outside the expected values' range; nan from some index on where the expected has
none. Each is a fact about the values, said with what it is consistent with, and only where
enough elements make it no accident. Called last, after every reading of causes.py."""

import numpy as np
import torch

from .causes import FLOAT_TOL, MAX_SOURCES, numeric

MIN_ELEMENTS = 4  # fewer entries are the same, or of one sign, by chance
MIN_OUTSIDE = 12  # values outside the expected range: draws of the same distribution give about 2
STAT_RTOL = 1e-5  # a statistic computed in float32 against the same one in float64


def _num(x: float) -> str:
    return f"{x:.4g}"


def spread(name: str, actual, expected, sources=(), tol=None) -> str | None:
    """One sentence on what ``actual`` is as a whole against ``expected`` (same shape), or
    None. ``sources`` (``(label, tensor)``) are tensors a constant may be a statistic of."""
    found = nan_onset(name, actual, expected)
    if found:
        return found
    a, e = numeric(actual), numeric(expected)
    if a is None or e is None or a.shape != e.shape or a.size < MIN_ELEMENTS:
        return None
    if tol is None:
        floats = (
            actual.is_floating_point() if isinstance(actual, torch.Tensor) else np.asarray(actual).dtype.kind == "f"
        )
        tol = FLOAT_TOL if floats else (0.0, 0.0)
    if _constant(e, tol) or not a.any():
        return None  # every reading below is about how the expected entries differ; zeros: zeros()
    return (
        _same_everywhere(name, a, e, sources, tol)
        or _same_along(name, a, e, tol)
        or _one_sign(name, a, e, tol)
        or _outside(name, a, e, tol)
    )


def zeros(name: str, actual, expected) -> str | None:
    """Every value 0 where the expected ones are not all 0: said as that fact and read as no
    transformation of the expected values (zeros are a square of tiny values, a value of one
    sign, a constant term off a constant: they match too many readings to support one)."""
    a, e = numeric(actual), numeric(expected)
    if a is None or e is None or a.shape != e.shape or a.size < MIN_ELEMENTS or a.any() or not e.any():
        return None  # a few values: the check's own line shows them all
    lo, hi = float(e.min()), float(e.max())
    shown = (
        f"every expected value is {_num(lo)}" if lo == hi else f"the expected values go from {_num(lo)} to {_num(hi)}"
    )
    return f"{name} is 0 at every element, where {shown}"


def _constant(x: np.ndarray, tol) -> bool:
    return bool(np.allclose(x, x.flat[0], rtol=tol[0], atol=tol[1]))


# ---------------------------------------------------------------- one value everywhere


def _same_everywhere(name, a, e, sources, tol):
    """Every entry holds one value where the expected entries differ (three distinct values
    at least). Not said of zeros: a tensor nothing was written into is another story."""
    if not _constant(a, tol) or len(np.unique(e)) < 3:
        return None
    v = float(a.flat[0])
    if v == 0:
        return None
    sentence = (
        f"{name} holds the same value, {_num(v)}, in all {a.size} entries, where the expected entries differ "
        f"(from {_num(float(e.min()))} to {_num(float(e.max()))})"
    )
    what = _statistic(v, e, sources)
    if what is None:
        return sentence
    return (
        f"{sentence}: {_num(v)} is {what}, consistent with one statistic over every element where one per entry "
        f"(per feature, row or column) was meant"
    )


def _close(v: float, w: float) -> bool:
    return bool(np.isclose(v, w, rtol=STAT_RTOL, atol=0))


def _statistic(v: float, e: np.ndarray, sources) -> str | None:
    """Which whole-tensor statistic ``v`` is: the expected values' mean, or exactly one
    statistic of exactly one source. A mean of probabilities (1/n) says nothing of a statistic."""
    if _close(v, float(e.mean())) and not _close(v * e.size, 1.0):
        return "the mean of the expected values"
    found = []
    for label, source in list(sources)[:MAX_SOURCES]:
        s = numeric(source)
        if s is None or s.size < 2 or str(label).startswith("_") or _constant(s, FLOAT_TOL):
            continue
        found += [f"{label}.{op}" for op, w in _stats(s) if _close(v, w)]
    return found[0] if len(found) == 1 else None


def _stats(s: np.ndarray):
    yield "mean()", float(s.mean())
    yield "std()", float(s.std(ddof=1))
    yield "std(unbiased=False)", float(s.std())
    yield "var()", float(s.var(ddof=1))
    yield "var(unbiased=False)", float(s.var())
    yield "sum()", float(s.sum())
    yield "amax()", float(s.max())
    yield "amin()", float(s.min())


def _same_along(name, a, e, tol):
    """Every slice along one dim holds one value (not all the same one), where every slice
    of the expected value along that dim varies: facts only, with the expected slices' mean
    where that is what each holds."""
    if a.ndim < 2:
        return None
    for d in range(a.ndim):
        if a.shape[d] < 3 or a.size // a.shape[d] < 2:
            continue
        first = np.take(a, [0], axis=d)
        if not np.allclose(a, first, rtol=tol[0], atol=tol[1]) or _constant(a, tol) or not first.any():
            continue
        spread_e = np.ptp(e, axis=d)
        if (spread_e <= tol[1] + tol[0] * np.abs(e).max(axis=d)).any():
            continue  # some expected slice is constant too: no clean contrast
        mean = np.isclose(first, e.mean(axis=d, keepdims=True), rtol=STAT_RTOL, atol=0).all()
        each = f", each the mean of the expected values along dim {d}" if mean else ""
        return (
            f"{name} holds one value in each slice along dim {d} (the same at every index of dim {d}{each}), where "
            f"the expected values vary along dim {d} in every slice"
        )
    return None


# ---------------------------------------------------------------- sign and range


def _one_sign(name, a, e, tol):
    """All values >= 0 (or <= 0) where the expected take both signs, each sign at a tenth
    of the entries at least (one value off zero is not a sign the expected values have)."""
    if a.size < 8:
        return None
    eps = tol[1]
    need = max(2, int(np.ceil(0.1 * e.size)))
    if (e < -eps).sum() < need or (e > eps).sum() < need:
        return None
    span = f"from {_num(float(a.min()))} to {_num(float(a.max()))}"
    both = f"where the expected values take both signs, from {_num(float(e.min()))} to {_num(float(e.max()))}"
    if (a >= 0).all():
        return (
            f"every value of {name} is >= 0 ({span}), {both}: consistent with a range or a function that gives no "
            f"negative values (a lower bound of 0, an abs, a square, an exp, a sigmoid, a clamp) where signed values "
            f"were meant"
        )
    if (a <= 0).all():
        return (
            f"every value of {name} is <= 0 ({span}), {both}: consistent with a range or a function that gives no "
            f"positive values (an upper bound of 0, a negated abs, a clamp) where signed values were meant"
        )
    return None


def _outside(name, a, e, tol):
    """Many values outside [min, max] of the expected ones: values of the same distribution
    fall outside it a couple of times (about 2 in any size), so a dozen and a tenth of the
    entries at least are another range, scale or distribution."""
    if len(np.unique(e)) < 4:
        return None
    lo, hi = float(e.min()), float(e.max())
    slack = tol[1] + tol[0] * max(abs(lo), abs(hi))
    out = int(((a < lo - slack) | (a > hi + slack)).sum())
    if out < max(MIN_OUTSIDE, 0.1 * a.size):
        return None
    return (
        f"{out} of {a.size} values of {name} lie outside the expected values' range, {_num(lo)} to {_num(hi)} "
        f"({name} goes from {_num(float(a.min()))} to {_num(float(a.max()))}): consistent with values drawn from, "
        f"scaled to or shifted into another range than the expected ones (another distribution, bound or scale)"
    )


# ---------------------------------------------------------------- nan


def nan_onset(name: str, actual, expected) -> str | None:
    """nan in every entry from some index of dim 0 on and in none before, where the expected
    value has none: a nan made at one step and carried into every later one (a trajectory,
    a history). The entries before it are said to match where they do."""
    a, e = numeric(actual, finite=False), numeric(expected)
    if a is None or e is None or a.shape != e.shape or a.ndim < 1 or a.size < MIN_ELEMENTS:
        return None
    rows = np.isnan(a).reshape(a.shape[0], -1)
    hit = np.flatnonzero(rows.any(axis=1))
    if hit.size == 0 or a.shape[0] < 2:
        return None
    k = int(hit[0])
    # all nan is said by the count already; an inf beside the nan is another story
    if k == 0 or not rows[k:].all() or np.isinf(a).any():
        return None
    same = np.allclose(a[:k], e[:k], rtol=1e-5, atol=1e-8)
    before = f"; the values before it {'match the expected ones' if same else 'are numbers'}"
    return (
        f"{name} is nan everywhere from index {k} of dim 0 on ({int(rows.sum())} of {a.size} values) and nowhere "
        f"before{before}, where the expected values are all numbers: consistent with a nan made at index {k} (0/0, "
        f"the square root or log of a negative number, an overflow) and carried into everything after it"
    )
