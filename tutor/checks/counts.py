"""A plain number (or list of numbers) that is a count where the reference's is a fraction:
an accuracy summed over the rows where their mean was meant.

Said only where it is established: every expected value lies in (0, 1], every one of the
learner's is a whole number and the same whole multiple k of the expected, and k is the size
of one of the reference's tensors (a count of rows). For one value (or a list of one value
repeated), k must be at least ``MIN_BARE`` as well: 4.0 where 0.5 was expected, or 3.0 where
1.0 was, is a whole multiple by chance as often as a count; a list of different fractions
that are all the same multiple of whole numbers is not.
"""

import math
from collections.abc import Callable

MIN_BARE = 10
MAX_NAMES = 200
_REL = 1e-5  # float32 means read back as Python floats: 0.62000000477 * 50


def _numbers(value) -> list | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return [float(value)]
    if (
        isinstance(value, list)
        and value
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    ):
        return [float(v) for v in value]
    return None


def factor(mine: list, theirs: list) -> int | None:
    """The whole k with mine == k * theirs item by item, mine whole numbers, theirs in (0, 1]."""
    if len(mine) != len(theirs) or not all(0 < e <= 1 and math.isfinite(v) for v, e in zip(mine, theirs, strict=True)):
        return None
    if not all(v == round(v) for v in mine):
        return None
    k = round(mine[0] / theirs[0])
    if k < 2 or not all(math.isclose(v, k * e, rel_tol=_REL) for v, e in zip(mine, theirs, strict=True)):
        return None
    if len(set(theirs)) < 2 and k < MIN_BARE:
        return None
    return k


def counts(learner: dict, ref: dict, count_named: Callable[..., str | None]) -> list:
    """``count_named(k, inputs, about)``: where a size k is seen (Context's), or None."""
    for i, (name, theirs) in enumerate(ref.items()):
        if i > MAX_NAMES:
            break
        if name.startswith("_"):
            continue
        mine, expected = _numbers(learner.get(name)), _numbers(theirs)
        if mine is None or expected is None:
            continue
        k = factor(mine, expected)
        size = count_named(k, (), name) if k else None
        if k and size:
            return [a_count(name, learner[name], k, size)]  # one: the others say the same
    return []


def a_count(name: str, value, k: int, size: str) -> str:
    what = f"every item of {name} is" if isinstance(value, list) else f"{name} is {value:g},"
    return (
        f"{what} a whole number exactly {k} times the expected value: consistent with a count where a "
        f"fraction was meant, .sum() where .mean() over {k} values ({k} is {size}) was meant"
    )
