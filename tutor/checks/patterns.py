"""What a wrong result's values say about the bug: the right values in another order
(reshape where a transpose was meant, or the reverse), or a result off by an exact whole
factor (a fact: whether it is a sum where a mean was meant is for Context.absorb to say).
Called on values that already differ."""

import itertools
import math
from fractions import Fraction

import numpy as np
import torch

from . import signatures

MAX_ELEMENTS = 100_000  # larger results are not searched (the diff alone is said)


def _same(a: np.ndarray, e: np.ndarray) -> bool:
    try:
        # The absolute tolerance shrinks with the expected values' scale: gradients of 1e-8
        # are all "close" to zeros at 1e-7, and any order of them would match.
        scale = float(np.max(np.abs(e), initial=0.0, where=~np.isnan(e))) if e.dtype.kind in "fc" else 1.0
        atol = 1e-7 * min(1.0, scale)
        return a.shape == e.shape and bool(np.allclose(a, e, rtol=1e-5, atol=atol, equal_nan=True))
    except TypeError:
        return bool(np.array_equal(a, e))


def _factors(n: int):
    return [(r, n // r) for r in range(2, n) if n % r == 0]


def reorder(name: str, a: np.ndarray, e: np.ndarray) -> str | None:
    if a.size != e.size or a.size < 4 or a.size > MAX_ELEMENTS or a.dtype.kind not in "biuf":
        return None
    fa, fe = a.ravel(), e.ravel()
    if _same(np.sort(fa), np.sort(fe)) is False:
        return None
    if e.ndim >= 2 and e.ndim <= 4:
        for perm in itertools.permutations(range(e.ndim)):
            if perm == tuple(range(e.ndim)):
                continue
            if _same(np.transpose(e, perm).ravel(), fa):
                swapped = [i for i, p in enumerate(perm) if p != i]
                dims = tuple(swapped) if len(swapped) == 2 else perm
                if np.transpose(e, perm).shape == a.shape:
                    # Square dims: the transpose itself, no reshape in it (W.t_() where W was meant).
                    return signatures.transposed(name, dims)
                return signatures.reordered(name, dims)
            if _same(np.transpose(a, perm).ravel(), fe):
                return signatures.regrouped(name)
    if e.ndim == 1:
        for r, c in _factors(a.size):
            if _same(fa.reshape(r, c).T.ravel(), fe):
                return signatures.reordered(name, (0, 1))
            if _same(fe.reshape(r, c).T.ravel(), fa):
                return signatures.regrouped(name)
    return None


EXACT = 1e-5  # relative: what float32 arithmetic leaves of an exact whole factor
MAX_RATIO_TERM = 64  # p/q readings: sizes of a batch, of classes, of features


def scale(name: str, a, e, ratios: bool = False) -> str | None:
    """``a`` is exactly k or 1/k times ``e`` (k a whole number >= 2); with ``ratios``, also
    exactly p/q of it (a number, where no other reading of a constant factor is made)."""
    try:
        a = np.asarray(a, dtype=np.float64)
        e = np.asarray(e, dtype=np.float64)
        if a.shape != e.shape or a.size == 0 or not (np.isfinite(a).all() and np.isfinite(e).all()):
            return None
        if np.all(np.mod(e, 1) == 0) and np.all(np.mod(a, 1) == 0):
            return None  # whole numbers are whole multiples of each other by chance too often
        nz = e != 0
        if not nz.any() or np.any(a[~nz] != 0) or np.any(a[nz] == 0):
            return None
        ratios = a[nz] / e[nz]
        k = float(np.median(ratios))
        if not np.allclose(ratios, k, rtol=1e-4, atol=0):
            return None
        # "Exactly" within float32 rounding: 2.0017 times is near 2, not a factor of 2.
        if k >= 1.5 and abs(k - round(k)) < EXACT * k:
            return signatures.exact_factor(name, round(k), True)
        inv = 1 / k if k else 0
        if inv >= 1.5 and abs(inv - round(inv)) < EXACT * inv:
            return signatures.exact_factor(name, round(inv), False)
        fraction = exact_fraction(k) if ratios else None
        if fraction is not None:
            return signatures.exact_ratio(name, *fraction)
    except Exception:
        return None
    return None


def exact_fraction(k: float) -> tuple[int, int] | None:
    """(p, q) where k is exactly p/q, both at least 2 (no whole factor) and at most
    MAX_RATIO_TERM, and not 3/2 or 2/3 (a sign flipped in 1 +- c gives those too often)."""
    if not k > 0:
        return None
    ratio = Fraction(k).limit_denominator(MAX_RATIO_TERM)
    p, q = ratio.numerator, ratio.denominator
    if min(p, q) < 2 or max(p, q) > MAX_RATIO_TERM or max(p, q) <= 3 or abs(k - float(ratio)) >= EXACT * k:
        return None
    return p, q


def _moved_axis(shape: tuple, expected: tuple) -> tuple | None:
    """(dim, expected dim) of the one axis longer than 1, where the other axes are all of size 1."""
    mine = [i for i, n in enumerate(shape) if n != 1]
    theirs = [i for i, n in enumerate(expected) if n != 1]
    if len(mine) == 1 and len(theirs) == 1 and mine != theirs:
        return mine[0], theirs[0]
    return None


def permuted(name: str, a, e) -> str | None:
    """Shapes that are a permutation of each other, values equal once permuted back."""
    a, e = np.asarray(a), np.asarray(e)
    if a.ndim != e.ndim or a.ndim < 2 or a.ndim > 4 or a.shape == e.shape or sorted(a.shape) != sorted(e.shape):
        return None
    moved = _moved_axis(a.shape, e.shape)
    if moved is not None and _same(a.reshape(e.shape), e):
        # Only a size-1 axis moved: the values lie in the same order, so a transpose cannot be
        # told from a join, an unsqueeze or a flatten along the wrong dim.
        mine, theirs = moved
        return (
            f"{name} holds the expected values laid out along dim {mine} where dim {theirs} was expected "
            f"(shape {a.shape}, expected {e.shape}), consistent with a cat, stack, unsqueeze or flatten along "
            f"dim {mine} where dim {theirs} was meant, or a transpose too many"
        )
    for perm in itertools.permutations(range(a.ndim)):
        if np.transpose(a, perm).shape == e.shape and _same(np.transpose(a, perm), e):
            return (
                f"{name} holds the expected values with its dimensions in another order (shape {a.shape}, expected "
                f"{e.shape}): transpose or permute it (a batch-first / time-first mix-up, or a transpose too many)"
            )
    return None


def explain(name: str, a, e) -> str | None:
    if name.endswith(".grad"):
        # a whole multiple of a gradient is accumulation (compare.grad_multiple); a fraction is not
        found = scale(name, a, e)
        return found if found and "1/" in found else None
    return scale(name, a, e) or (reorder(name, np.asarray(a), np.asarray(e)) if np.ndim(a) else None)


_DTYPE_CONSTANTS: list = []


def _dtype_constants() -> list:
    """(value, how torch names it) for the limits of torch's number formats: finfo's max, min,
    eps, tiny of the float dtypes, iinfo's max and min of the integer ones."""
    if not _DTYPE_CONSTANTS:
        floats = ("float16", "bfloat16", "float32", "float64")
        ints = ("int8", "uint8", "int16", "int32", "int64")
        for name in floats:
            info = torch.finfo(getattr(torch, name))
            for attr in ("max", "min", "eps", "tiny"):
                _DTYPE_CONSTANTS.append((float(getattr(info, attr)), f"torch.finfo(torch.{name}).{attr}"))
        for name in ints:
            limits = torch.iinfo(getattr(torch, name))
            for attr in ("max", "min"):
                _DTYPE_CONSTANTS.append((float(getattr(limits, attr)), f"torch.iinfo(torch.{name}).{attr}"))
    return _DTYPE_CONSTANTS


def dtype_constant(name: str, actual, expected) -> str | None:
    """A number that is exactly one limit of another number format than the expected value's
    (f16_max = 32767, int16's largest): which one it is. Only where the expected value is itself
    such a limit, and only one format's limit gives the learner's number."""
    try:
        a, e = float(actual), float(expected)
    except (TypeError, ValueError, OverflowError):
        return None
    if a == e or not math.isfinite(a) or a == 0:
        return None
    table = _dtype_constants()
    meant = {how for value, how in table if value == e}
    if not meant:
        return None
    mine = {how for value, how in table if value == a}
    if len(mine) != 1:
        return None
    got = mine.pop()
    if len(meant) == 1:  # finfo(float16).tiny where finfo(float16).max was meant: the same format, another limit
        return f"{name} is {got}, where {meant.pop()} was expected"
    formats = {how.rpartition(".")[0] for how in meant}
    kind = "another format's limit" if got.rpartition(".")[0] not in formats else "another limit"
    return f"{name} is {got}, {kind} than the expected value's"
