"""Where and how a wrong tensor differs: the learner's value compared with cheap
transformations of the expected one (a sign flip, a constant factor or term, an additive
term that varies along one dim such as a bias, a ReLU extra or missing, a roll, a
reversal, a window shifted by one, an extra or missing size-1 dim, a reduction over
another dim, a clamp at another bound, an affine map, blocks joined in another order). A
cause is said only when one transformation reproduces the learner's value everywhere,
within the check's tolerance; two facts of a whole value are said with it (every value a
bfloat16 number, a history that rises where the expected one falls). Otherwise spans.py
says what the value is as a whole, or the diff alone (which indices, how many) is said.
Called on values that already differ, after patterns.py found nothing."""

from collections.abc import Callable

import numpy as np
import torch

from . import patterns, signatures

MAX_ELEMENTS = 100_000  # larger values are not searched
MAX_ROLL_WORK = 2_000_000  # elements compared over every shift of a dim; past it, shifts of 1 and 2 only
MAX_SOURCES = 24  # tensors of the reference's namespace (or a call's inputs) tried as a reduction's input
FLOAT_TOL = (1e-5, 1e-8)  # an exact check of floats: transformed values still round differently


# The phrase each kind of cause is said with, and its topic (the class report counts
# learners by it: "auto:cause:bias-like").
TOPICS = (
    ("with its sign flipped", "sign"),
    ("constant factor", "factor"),
    ("a constant term", "constant-term"),
    ("broadcast like a bias", "bias-like"),
    ("in reverse order along", "reversed"),
    ("wrapping round", "rolled"),
    ("an off-by-one along that dim", "window-start"),
    ("end off by one", "window-end"),
    ("start off by one", "window-end"),
    ("keepdim=True where", "keepdim"),
    ("keepdim=True missing", "keepdim"),
    ("keepdim=True is extra", "keepdim"),
    ("over the wrong dim", "reduction-dim"),
    ("folds every element into one number", "reduction-dim"),
    ("negative entries set to 0", "clamped"),
    ("negative entries where the expected value has 0", "clamped"),
    ("sums to 1 along dim", "normalised-dim"),
    ("holds log-probabilities over dim", "normalised-dim"),
    ("a clamp at", "clamped"),
    ("both scaled and shifted", "affine"),
    ("blocks joined in another order", "blocks-order"),
    ("representable in bfloat16", "precision"),
    ("representable in float16", "precision"),
    ("where the expected falls", "direction"),
    ("where the expected rises", "direction"),
    ("where the expected entries differ", "constant"),
    ("where the expected values vary along", "constant"),
    ("where the expected values take both signs", "sign-support"),
    ("outside the expected values' range", "range"),
    ("nan everywhere from index", "nan-onset"),
)


def topic(sentence: str) -> str | None:
    for phrase, name in TOPICS:
        if phrase in sentence:
            return f"cause:{name}"
    return None


def _tol(a: np.ndarray, tol):
    if tol is not None:
        return tol
    return FLOAT_TOL if a.dtype.kind in "fc" else (0.0, 0.0)


def _match(a: np.ndarray, t: np.ndarray, tol) -> bool:
    if a.shape != t.shape:
        return False
    with np.errstate(invalid="ignore", over="ignore"):
        return bool(np.allclose(a, t, rtol=tol[0], atol=tol[1], equal_nan=True))


def numeric(x, finite: bool = True) -> np.ndarray | None:
    """``x`` (a tensor, an array, numbers) as float64 numbers; None for a meta, complex or too
    large tensor, what is not numbers or is empty, and (``finite``) what holds inf or nan."""
    if isinstance(x, torch.Tensor):
        if x.is_meta or x.is_complex() or x.numel() > MAX_ELEMENTS:
            return None
        x = x.detach().cpu().to(torch.float64).numpy()
    try:
        x = np.asarray(x)
    except Exception:
        return None
    if x.dtype.kind not in "biuf" or x.size == 0 or x.size > MAX_ELEMENTS:
        return None
    x = x.astype(np.float64)
    return None if finite and not np.isfinite(x).all() else x


def _num(x: float) -> str:
    return f"{x:.4g}"


def _dims(dims) -> str:
    dims = list(dims)
    return f"dim {dims[0]}" if len(dims) == 1 else "dims " + ", ".join(str(d) for d in dims)


def explain(name: str, actual, expected, tol=None) -> str | None:
    """One sentence naming the transformation of the expected value that the learner's
    value is, for values of the same shape; None when none reproduces it."""
    a, e = numeric(actual), numeric(expected)
    if a is None or e is None or a.shape != e.shape:
        return None
    tol = _tol(np.asarray(actual), tol)
    if _match(a, e, tol) or (not a.any() and e.any()):
        return None  # zeros everywhere match too many transformations to support one (spans.zeros)
    for find in (
        _sign,
        _power,
        _factor,
        _offset,
        _along,
        _scaled_along,
        _clamped,
        _clamped_at,
        _reversed,
        _rolled,
        _window,
        _affine,
        _rounded,
        _blocks,
        _reordered,
        _precision,
        _direction,
    ):
        found = find(name, a, e, tol)
        if found:
            return found
    return None


def _sums_to_one(x: np.ndarray) -> list:
    """The dims along which every slice of x (no value negative) sums to 1."""
    if x.ndim < 2 or (x < 0).any():
        return []
    return [d for d in range(x.ndim) if x.shape[d] >= 2 and np.allclose(x.sum(axis=d), 1.0, rtol=1e-4, atol=1e-5)]


def _log_sums_to_one(x: np.ndarray) -> list:
    """The dims along which every slice of exp(x) (x never above 0) sums to 1: log-probabilities."""
    if x.ndim < 2 or (x > 1e-6).any():
        return []
    with np.errstate(under="ignore"):
        return [d for d in range(x.ndim) if x.shape[d] >= 2 and np.allclose(np.exp(x).sum(axis=d), 1.0, atol=1e-4)]


def normalised(name: str, actual, expected) -> str | None:
    """Probabilities (or log-probabilities) over another dim: the learner's value sums to 1
    along exactly one dim, the expected value along exactly one other (tried after
    :func:`reduced`, which names the softmax itself when the reference's own input reproduces it)."""
    a, e = numeric(actual), numeric(expected)
    if a is None or e is None or a.shape != e.shape:
        return None
    mine, theirs = _sums_to_one(a), _sums_to_one(e)
    if len(mine) == 1 and len(theirs) == 1 and mine != theirs:
        return (
            f"{name} sums to 1 along dim {mine[0]} where the expected value sums to 1 along dim {theirs[0]}: "
            f"consistent with a softmax (or a normalisation) over dim {mine[0]} where dim {theirs[0]} was meant"
        )
    mine, theirs = _log_sums_to_one(a), _log_sums_to_one(e)
    if len(mine) == 1 and len(theirs) == 1 and mine != theirs:
        return (
            f"{name} holds log-probabilities over dim {mine[0]} (its exp() sums to 1 along dim {mine[0]}) where the "
            f"expected value's are over dim {theirs[0]}: consistent with a log_softmax over dim {mine[0]} where dim "
            f"{theirs[0]} was meant"
        )
    return None


def _sign(name, a, e, tol):
    if a.size >= 2 and _match(a, -e, tol):
        return (
            f"{name} is the expected value with its sign flipped everywhere ({name} == -expected): a subtraction "
            f"the wrong way round, a minus sign missing or extra"
        )
    return None


def _factor(name, a, e, tol):
    if a.size < 3 or not (np.abs(e) > max(tol[1], 1e-12)).any():
        return None
    c = float(np.dot(a.ravel(), e.ravel()) / np.dot(e.ravel(), e.ravel()))
    if c == 0 or not _match(a, c * e, tol) or _match(e, c * e, tol):
        return None
    if abs(c - 1) < 1e-3:
        # 1.0000056 shown as "1 times" says nothing; a factor this near 1 is a small term, not a scale.
        return (
            f"{name} is {c:.7g} times the expected value everywhere: close, but off by a tiny constant factor, "
            f"consistent with a small term missing or extra in a divisor or a scale (an eps, say)"
        )
    k = round(1 / c) if abs(c) < 1 else 0
    times = f"1/{k} of" if abs(k) >= 2 and abs(1 / c - k) < 1e-3 * abs(k) else f"{_num(c)} times"
    sentence = (
        f"{name} is {times} the expected value everywhere: consistent with a constant factor missing, extra or "
        f"wrong (a scale such as 1/sqrt(d), a learning rate, a divisor)"
    )
    # A whole factor (or its inverse) may be a count of values, which the context can name.
    up = round(c) if c >= 2 and abs(c - round(c)) < 1e-3 * c else 0
    if up or (k >= 2 and times.startswith("1/")):
        return signatures.near_factor(sentence, name, up or k, bool(up))
    # So may both terms of an exact ratio (a divisor of one size where another was meant).
    fraction = patterns.exact_fraction(c)
    if fraction is not None:
        return signatures.ratio_reading(sentence, name, *fraction)
    return sentence


def _rounded(name, a, e, tol):
    """The expected value rounded to k decimals, or with its fractional part dropped, at every
    element (and not already within the tolerance of it). Only for four values or more, three
    of them distinct: two values near ±0.7 are ±1 rounded by chance (a std of 1 where n - 1 was meant)."""
    if a.size < 4 or len(np.unique(a)) < 3:
        return None
    with np.errstate(invalid="ignore", over="ignore"):
        for k in range(7):
            r = np.round(e, k)
            if np.allclose(a, r, rtol=1e-6, atol=0) and not _match(r, e, tol):
                return (
                    f"{name} is the expected value rounded to {k} decimal{'' if k == 1 else 's'} at every element: "
                    f"consistent with a round(..., {k}) (or a format) applied to numbers that should be kept whole"
                )
        t = np.trunc(e)
        if np.allclose(a, t, rtol=1e-6, atol=0) and not _match(t, e, tol):
            return (
                f"{name} is the expected value with its fractional part dropped at every element: consistent "
                f"with int() or // where the value itself was meant"
            )
    return None


def _reordered(name, a, e, tol):
    """The expected values, each as often, in another order (the readings above found no
    roll, reversal or transpose that gives it): only for values of which at least four are
    distinct, where an order is something to get wrong."""
    if a.size < 4 or len(np.unique(e)) < 4:
        return None
    if not _match(np.sort(a, axis=None), np.sort(e, axis=None), tol):
        return None
    return (
        f"{name} holds the expected values, each as often, in another order: consistent with items, rows or "
        f"blocks taken in another order (a sort, another iteration order)"
    )


MAX_BLOCK_ELEMENTS = 20_000  # longer values are not cut into blocks (a search per block start)
MAX_BLOCKS = 16  # more pieces than this is a shuffle, not pieces joined in another order
SHOWN_BLOCKS = 4


def _blocks(name, a, e, tol):
    """A 1-D value that is the expected one cut into contiguous pieces joined in another
    order (the gradients of several parameters, flattened and joined in a sorted order):
    each piece holds two distinct values at least, so that where it sits is no accident."""
    if a.ndim != 1 or not 8 <= a.size <= MAX_BLOCK_ELEMENTS or len(np.unique(e)) < 4:
        return None
    if not _match(np.sort(a), np.sort(e), tol):
        return None
    found = _cut(a, e, tol)
    if found is None or not 2 <= len(found) <= MAX_BLOCKS:
        return None
    if any(n < 2 or len(np.unique(a[i : i + n])) < 2 for i, _, n in found):
        return None
    shown = ", ".join(f"[{i}:{i + n}] is the expected [{j}:{j + n}]" for i, j, n in found[:SHOWN_BLOCKS])
    more = f", and {len(found) - SHOWN_BLOCKS} more" if len(found) > SHOWN_BLOCKS else ""
    sizes = ", ".join(str(n) for _, _, n in found)
    return (
        f"{name} is the expected value in {len(found)} blocks joined in another order (of {sizes} elements): "
        f"{shown}{more}; consistent with pieces (the tensors of a list, parameters, items) joined in another "
        f"order (a sort, another iteration order)"
    )


def _cut(a, e, tol):
    """(start in a, start in e, length) of each piece, each the longest run of a that goes on
    unbroken from an unused place of e holding its first value; None where a value has none."""
    n = a.size
    used = np.zeros(n, dtype=bool)
    close = np.isclose(a[:, None], e[None, :], rtol=tol[0], atol=tol[1]) if n <= 2_000 else None
    out: list[tuple[int, int, int]] = []
    i = 0
    while i < n:
        row = close[i] if close is not None else np.isclose(e, a[i], rtol=tol[0], atol=tol[1])
        best, at = 0, -1
        for j in np.flatnonzero(row & ~used)[:64]:
            r = min(n - i, n - int(j))
            same = np.isclose(a[i : i + r], e[j : j + r], rtol=tol[0], atol=tol[1]) & ~used[j : j + r]
            length = r if same.all() else int(np.argmin(same))
            if length > best:
                best, at = length, int(j)
        if at < 0:
            return None
        used[at : at + best] = True
        out.append((i, at, best))
        i += best
    return out


def _affine(name, a, e, tol):
    """c * expected + d with c not 1 and d not 0 (each alone is another reading): the same
    random numbers drawn into another range, a normalisation with other statistics."""
    if a.size < 4 or len(np.unique(e)) < 4:
        return None
    c, d = np.polyfit(e.ravel(), a.ravel(), 1)
    c, d = float(c), float(d)
    scale = float(np.abs(a).max())
    if abs(c) < 1e-6 or abs(c - 1) < 1e-6 or abs(d) <= 1e-6 * scale or not _match(a, c * e + d, tol):
        return None
    lo, hi = float(e.min()), float(e.max())
    ends = sorted((c * lo + d, c * hi + d))
    term = f"plus {_num(d)}" if d > 0 else f"minus {_num(-d)}"
    return (
        f"{name} is {_num(c)} times the expected value {term} at every element: the expected values, from "
        f"{_num(lo)} to {_num(hi)}, become values from {_num(ends[0])} to {_num(ends[1])}; consistent with values "
        f"both scaled and shifted (the same random numbers drawn into another range, a normalisation applied, "
        f"undone or with other statistics)"
    )


# Significant bits of the lower-precision floats a result may have been computed in.
_PRECISIONS = (("bfloat16", 8), ("float16", 11))


def _fits(x: np.ndarray, bits: int) -> np.ndarray:
    """Whether each value's significand fits in ``bits`` bits (its exponent is not checked)."""
    m, _ = np.frexp(x)
    scaled = m * float(2**bits)
    return scaled == np.round(scaled)


def _precision(name, a, e, tol):
    """Every value is a bfloat16 (or float16) number where the expected values are not: a
    result computed at lower precision, whatever dtype it has now. Only for values that need
    more bits than a small fraction or count does (those fit any format)."""
    if a.size < 4 or len(np.unique(a)) < 4:
        return None
    for fmt, bits in _PRECISIONS:
        if not _fits(a, bits).all() or _fits(e, bits).mean() > 0.5:
            continue
        if _fits(a, 5).mean() > 0.5 or (a == np.round(a)).mean() > 0.5:
            return None  # small fractions or whole numbers: every format holds them
        return (
            f"every value of {name} is representable in {fmt} ({bits} significant bits), where the expected values "
            f"are not: consistent with a result computed in {fmt} (inside an autocast region, from {fmt} inputs) "
            f"or rounded to it, where full precision was meant"
        )
    return None


def _direction(name, a, e, tol):
    """A sequence that starts where the expected one does and then rises where the expected
    one falls (or the reverse), at its end and on average: a loss history of gradient ascent."""
    if a.ndim != 1 or a.size < 4 or not np.isclose(a[0], e[0], rtol=max(tol[0], 1e-6), atol=tol[1]):
        return None
    start = float(e[0])
    rises = a[-1] > start and a[1:].mean() > start and e[-1] < start and e[1:].mean() < start
    falls = a[-1] < start and a[1:].mean() < start and e[-1] > start and e[1:].mean() > start
    if not (rises or falls):
        return None
    mine, theirs = ("rises", "falls") if rises else ("falls", "rises")
    fact = (
        f"{name} starts at the expected first value, {_num(start)}, then {mine} (to {_num(float(a[-1]))} at the "
        f"end) where the expected {theirs} (to {_num(float(e[-1]))})"
    )
    if not rises:
        # What the expected raises is no loss the steps descend (a GradScaler's scale, an
        # accuracy): what makes it fall is not established by the values.
        return fact
    return (
        f"{fact}: consistent with steps that move it the wrong way (an update with its sign flipped, a step too large)"
    )


def _power(name, a, e, tol):
    """The square of the expected value, or its square root, element by element (values that
    vary, so that no constant factor reads the same)."""
    if a.size < 2 or _match(e, np.full_like(e, float(np.median(e))), tol):
        return None
    with np.errstate(invalid="ignore", over="ignore"):
        if _match(a, e * e, tol) and not _match(e, e * e, tol):
            return (
                f"{name} is the square of the expected value at every element: consistent with a square root "
                f"missing (a squared norm where the norm was meant, a variance where a standard deviation was)"
            )
        if (e >= 0).all() and _match(a, np.sqrt(e), tol) and not _match(e, np.sqrt(e), tol):
            return (
                f"{name} is the square root of the expected value at every element: consistent with a square root "
                f"too many (a norm where its square was meant, a standard deviation where a variance was)"
            )
    return None


def _offset(name, a, e, tol):
    d = a - e
    c = float(np.median(d))
    if a.size < 3 or not _match(a, e + c, tol):
        return None
    shifted = _window(name, a, e, tol)
    if shifted is not None:
        # Expected values that rise by a constant step (an arange, say): a window one place
        # off gives the same numbers as a constant added, and which one the code did is not known.
        return f"{shifted}; the same numbers as the expected value plus {_num(c)} everywhere (a constant term)"
    places = _steps_of(e, c, tol)
    if places is not None:
        # An arange-like expected value: a window k places off holds the same numbers.
        dim, k, step = places
        way = "late" if k > 0 else "early"
        return (
            f"{name} is the expected value plus {_num(c)} everywhere; along dim {dim} the expected values step by "
            f"{_num(step)}, so these are also the values {abs(k)} place{'s' if abs(k) > 1 else ''} further "
            f"{'along' if k > 0 else 'back'}: consistent with a constant term added where none belongs (or one "
            f"missing), or a slice or window that starts {abs(k)} place{'s' if abs(k) > 1 else ''} {way}"
        )
    return (
        f"{name} is the expected value plus {_num(c)} everywhere: consistent with a constant term added where none "
        f"belongs (or one missing)"
    )


def _steps_of(e, c: float, tol):
    """(dim, k, step) where ``e`` rises by one constant step along ``dim`` and ``c`` is k
    such steps (0 < |k| < the dim's size); else None."""
    for dim in range(e.ndim):
        n = e.shape[dim]
        if n < 3:
            continue
        steps = np.diff(e, axis=dim)
        step = float(np.median(steps))
        if step == 0 or not _match(steps, np.full_like(steps, step), tol):
            continue
        k = c / step
        if abs(k - round(k)) < 1e-6 and 0 < abs(round(k)) < n:
            return dim, round(k), step
    return None


def _along(name, a, e, tol):
    """The difference varies along some dims and is the same along the others: a missing
    or extra additive term broadcast like a bias (one value per output feature)."""
    if a.ndim < 2:
        return None
    d = a - e
    for keep in range(a.ndim):
        others = tuple(i for i in range(a.ndim) if i != keep)
        # The term has one value per index of the dim kept; the values beyond those must be
        # three or more to establish it (two rows of a 2 x 2 case may agree by chance; two rows
        # of three outputs, a bias left out, do not).
        if a.shape[keep] < 2 or int(np.prod([a.shape[i] for i in others])) < 2 or a.size - a.shape[keep] < 3:
            continue
        term = np.median(d, axis=others, keepdims=True)
        if _match(a, e + term, tol) and not _match(a, e + float(np.median(d)), tol):
            flat = np.atleast_1d(np.squeeze(term))
            off = [i for i in range(flat.size) if abs(float(flat[i])) > tol[1] + tol[0] * abs(float(flat[i]))]
            if len(off) == 1 and flat.size >= 3:
                # One index along the dim differs, by the same amount at every index of the others.
                i = off[0]
                return (
                    f"{name} differs from the expected value only at index {i} of {_dims([keep])}, by "
                    f"{_num(float(flat[i]))} at every index of {_dims(others)}: that {_slot(keep, a.ndim)}'s values "
                    f"are wrong (a constant such as 0 where 1 belongs, say) or have a term added"
                )
            sign = "minus" if (flat < 0).sum() > (flat > 0).sum() else "plus"
            shown = ", ".join(_num(float(v)) for v in flat[:4]) + (", …" if flat.size > 4 else "")
            return (
                f"{name} is the expected value {sign} a term that varies only along {_dims([keep])} (the same for "
                f"every index of {_dims(others)}; {name} - expected = [{shown}] along {_dims([keep])}): consistent "
                f"with an additive term broadcast like a bias (a bias, a mean) missing, extra or wrong"
            )
    return None


def _slot(dim: int, ndim: int) -> str:
    return "column" if ndim == 2 and dim == 1 else "row" if ndim == 2 and dim == 0 else "slice"


def _scaled_along(name, a, e, tol):
    """The ratio varies along one dim and is the same along the others: a factor broadcast
    like a per-feature scale (a std that multiplies where it should divide, a gain)."""
    if a.ndim < 2:
        return None
    for keep in range(a.ndim):
        others = tuple(i for i in range(a.ndim) if i != keep)
        if a.shape[keep] < 2 or int(np.prod([a.shape[i] for i in others])) < 2:
            continue
        with np.errstate(invalid="ignore", divide="ignore"):
            # each slice's best factor (least squares); a slice of zeros has none to find
            factor = (a * e).sum(axis=others, keepdims=True) / (e * e).sum(axis=others, keepdims=True)
        if not np.isfinite(factor).all() or _match(factor, np.full_like(factor, float(np.median(factor))), tol):
            continue  # one factor everywhere is _factor's reading
        # Each scaled slice must show its factor twice or more (a single wrong element "is" any
        # factor), and more than one slice must be scaled.
        if np.isclose(factor, 0.0, atol=tol[1]).any():
            continue  # a slice set to 0 is no scale (a ReLU or a mask zeroed it)
        scaled = ~np.isclose(factor, 1.0, rtol=tol[0], atol=tol[1])
        shown_twice = (e != 0).sum(axis=others, keepdims=True) >= 2
        if int(scaled.sum()) < 2 or not shown_twice[scaled].all():
            continue
        if _match(a, e * factor, tol):
            flat = np.atleast_1d(np.squeeze(factor)).astype(np.float64)
            shown = ", ".join(_num(float(v)) for v in flat[:4]) + (", …" if flat.size > 4 else "")
            fact = (
                f"{name} is the expected value times a factor that varies only along {_dims([keep])} (the same for "
                f"every index of {_dims(others)}; {name} / expected = [{shown}] along {_dims([keep])})"
            )
            # The last dim holds features; along another (the batch's rows), a scale per row.
            kind = (
                "a per-feature scale missing, extra or wrong (a standard deviation that multiplies where it "
                "should divide, a gain, a normaliser)"
                if keep == a.ndim - 1
                else f"a scale per index of {_dims([keep])} missing, extra or wrong (a divisor such as a count or "
                "a length of each row, a normaliser)"
            )
            out = FactorAlong(f"{fact}: consistent with {kind}")
            out.fact, out.factor = fact, flat
            return out
    return None


class FactorAlong(str):
    """The reading of a factor that varies along one dim; ``factor`` holds its values, so a
    reader that knows the tensors in play can say which one it is (Context.absorb)."""

    fact: str
    factor: np.ndarray


# How a factor relates to a tensor c in play, and what that is consistent with.
_FACTOR_FORMS = (
    (
        lambda c: 1 / np.sqrt(c),
        "1/sqrt({c})",
        "a division by {c} where its square root was meant (a variance where a standard deviation was meant)",
    ),
    (lambda c: np.sqrt(c), "sqrt({c})", "a division by sqrt({c}) left out (a normalisation missing)"),
    (lambda c: 1 / c, "1/{c}", "a division by {c} too many"),
    (lambda c: c, "{c}", "a division by {c} left out, or a multiplication by it where none was meant"),
    (
        lambda c: c / c.sum(),
        "{c} / {c}.sum()",
        "a division by the total of {c} where each row's own entry of {c} was meant (one count for the whole "
        "batch where each row has its own)",
    ),
    (
        lambda c: c.sum() / c,
        "{c}.sum() / {c}",
        "a division by each row's own entry of {c} where their total was meant",
    ),
)


def factor_is(fact: str, factor: np.ndarray, candidates) -> str | None:
    """The reading of a factor along one dim as a simple function of one tensor in play
    (``candidates``: (name, array) pairs, the values it may be), said only where every value
    matches, there are three or more of them, and they are not all alike."""
    if factor.size < 3 or np.allclose(factor, factor[0], rtol=1e-3):
        return None
    for key, c in candidates:
        if c.shape != factor.shape or not np.isfinite(c).all() or (c <= 0).any():
            continue
        for form, shown, cause in _FACTOR_FORMS:
            with np.errstate(all="ignore"):
                want = form(c)
            if np.isfinite(want).all() and np.allclose(factor, want, rtol=2e-3, atol=0):
                return (
                    f"{fact}, which is {shown.format(c=key)} element by element: consistent with {cause.format(c=key)}"
                )
    return None


def _clamped(name, a, e, tol):
    """A ReLU (a clamp at 0) where none belongs, or one missing: one value is the other with
    its negative entries set to 0, and the same everywhere else."""
    if a.size < 2 or "c" in (a.dtype.kind, e.dtype.kind):
        return None
    if (e < -tol[1]).any() and _match(a, np.maximum(e, 0), tol):
        return (
            f"{name} is the expected value with its negative entries set to 0 ({name} == expected.clamp(min=0)) "
            f"and the same elsewhere: consistent with a ReLU (or a clamp at 0) where none belongs, after the "
            f"last layer say"
        )
    if (a < -tol[1]).any() and _match(np.maximum(a, 0), e, tol):
        return (
            f"{name} has negative entries where the expected value has 0, and the expected value elsewhere "
            f"(expected == {name}.clamp(min=0)): consistent with a ReLU (or a clamp at 0) missing"
        )
    return None


def _clamped_at(name, a, e, tol):
    """A clamp at a bound other than 0 (a floor of 1 for a std, say), missing or where none
    belongs: one value is the other with its entries beyond the other's least (or largest)
    value moved to it, two entries at least, and the same everywhere else."""
    if a.size < 4 or len(np.unique(e)) < 3:
        return None
    for low in (True, False):
        clip = np.maximum if low else np.minimum
        for mine, theirs, missing in ((a, e, True), (e, a, False)):
            c = float(theirs.min() if low else theirs.max())
            slack = tol[1] + tol[0] * abs(c)
            beyond = int(((mine < c - slack) if low else (mine > c + slack)).sum())
            if beyond >= 2 and _match(clip(mine, c), theirs, tol):
                return _clamp_sentence(name, c, beyond, low, missing)
    return None


def _clamp_sentence(name, c, k, low, missing):
    side, call = ("below", f"clamp(min={_num(c)})") if low else ("above", f"clamp(max={_num(c)})")
    if missing:
        return (
            f"{name} has {k} entries {side} {_num(c)} where the expected value is {_num(c)}, and the expected value "
            f"elsewhere (expected == {name}.{call}): consistent with a clamp at {_num(c)} missing, or one at "
            f"another bound"
        )
    return (
        f"{name} is the expected value with its {k} entries {side} {_num(c)} moved to {_num(c)} ({name} == "
        f"expected.{call}) and the same elsewhere: consistent with a clamp at {_num(c)} where none belongs, or one "
        f"where another bound was meant"
    )


def _reversed(name, a, e, tol):
    for dim in range(a.ndim):
        if a.shape[dim] < 2:
            continue
        flipped = np.flip(e, axis=dim)
        if not _match(e, flipped, tol) and _match(a, flipped, tol):
            # Established: the numbers are the reversed ones. With two parts along the dim (a
            # column joined to x, padding) the same numbers come from putting one on the other side.
            return (
                f"{name} holds the expected values in reverse order along dim {dim}: consistent with a flip, "
                "or with parts joined or padded on the other side"
            )
    return None


def _rolled(name, a, e, tol):
    for dim in range(a.ndim):
        n = a.shape[dim]
        if n < 3:
            continue
        shifts = range(1, n) if n * a.size <= MAX_ROLL_WORK else (1, 2, n - 1, n - 2)
        for s in shifts:
            rolled = np.roll(e, s, axis=dim)
            if _match(a, rolled, tol) and not _match(e, rolled, tol):
                k = s if s <= n // 2 else s - n
                where = f"index i holds the expected value at i{'-' if k > 0 else '+'}{abs(k)}"
                return (
                    f"{name} holds the expected values shifted by {abs(k)} along dim {dim}, wrapping round "
                    f"({where}): consistent with torch.roll by the wrong shift, an index off by {abs(k)}, or "
                    f"values taken or drawn in another order"
                )
    return None


def _window(name, a, e, tol):
    """A slice taken one place early or late: every element but the edge one is the expected
    value at the neighbouring index along one dim."""
    for dim in range(a.ndim):
        n = a.shape[dim]
        if n < 3:
            continue
        head = [slice(None)] * a.ndim
        tail = [slice(None)] * a.ndim
        head[dim], tail[dim] = slice(1, None), slice(None, -1)
        h, t = tuple(head), tuple(tail)
        if _match(e[h], e[t], tol):
            continue  # constant along the dim: a shift changes nothing
        # A sequence of values recorded one step late or early (a loss read after the update
        # that should have been read before it) shifts the same way as a slice.
        late = ", or values recorded one step late (a loss read after the update)" if a.ndim == 1 else ""
        early = ", or values recorded one step early" if a.ndim == 1 else ""
        if _match(a[t], e[h], tol):
            return (
                f"{name} along dim {dim} holds at index i the expected value at i+1 (all but the last index): "
                f"consistent with an off-by-one along that dim (a slice or window that starts one place late, or an "
                f"end one place short{late})"
            )
        if _match(a[h], e[t], tol):
            return (
                f"{name} along dim {dim} holds at index i the expected value at i-1 (all but the first index): "
                f"consistent with an off-by-one along that dim (a slice or window that starts one place early, or an "
                f"end, such as <= for <, one place too far{early})"
            )
    return None


def reshaped(name: str, actual, expected, tol=None) -> str | None:
    """For values of different shapes: the expected values with a size-1 dim added or
    removed (keepdim), or one element more or fewer at an end of one dim (a slice's end off
    by one)."""
    a, e = numeric(actual), numeric(expected)
    if a is None or e is None or a.shape == e.shape:
        return None
    tol = _tol(np.asarray(actual), tol)
    if a.size == e.size and _match(np.squeeze(a), np.squeeze(e), tol):
        if a.ndim > e.ndim:
            return (
                f"{name} has the expected values with an extra dim of size 1 (shape {a.shape}, expected {e.shape}): "
                f"consistent with keepdim=True where the reference reduces without it, an unsqueeze too many, a "
                f"slice of length 1 where an index was meant (x[i:i+1] keeps the dim x[i] drops), brackets around "
                f"the data given to torch.tensor (torch.tensor([x])), or a reshape or view to a shape with an extra 1"
            )
        if a.ndim < e.ndim:
            return (
                f"{name} has the expected values without the size-1 dim the reference keeps (shape {a.shape}, "
                f"expected {e.shape}): consistent with keepdim=True missing, a squeeze too many, an index where a "
                f"slice of length 1 was meant (x[i] drops the dim x[i:i+1] keeps), or a reshape or flatten that drops it"
            )
    if a.ndim != e.ndim:
        return None
    differ = [i for i in range(a.ndim) if a.shape[i] != e.shape[i]]
    if len(differ) != 1:
        return None
    dim = differ[0]
    k = abs(a.shape[dim] - e.shape[dim])
    longer, shorter, more = (a, e, True) if a.shape[dim] > e.shape[dim] else (e, a, False)
    if shorter.shape[dim] == 0:
        return None
    for end, cut in (("end", slice(None, -k)), ("start", slice(k, None))):
        index = [slice(None)] * a.ndim
        index[dim] = cut
        if not _match(shorter, longer[tuple(index)], tol):
            continue
        if k == 1:
            what = "one element more" if more else "one element fewer"
            return (
                f"{name} has the expected values with {what} at the {end} of dim {dim} (shape {a.shape}, expected "
                f"{e.shape}): consistent with a slice or window {'end' if end == 'end' else 'start'} off by one, "
                "or a length taken from other data (padding to another length)"
            )
        side = "first" if end == "start" else "last"
        what = (
            f"with {k} more entries at the {end} of dim {dim}"
            if more
            else f"without its {side} {k} entries along dim {dim}"
        )
        return (
            f"{name} is the expected value {what} (shape {a.shape}, expected {e.shape}): consistent with a part "
            f"{'added' if more else 'left out'} there (a {side} batch, a slice that starts or ends elsewhere, an item "
            f"{'appended' if more else 'dropped'})"
        )
    return None


# ---------------------------------------------------------------- reductions

_REDUCTIONS = {
    "sum": lambda t, d, k: t.sum(dim=d, keepdim=k),
    "mean": lambda t, d, k: t.mean(dim=d, keepdim=k),
    "amax": lambda t, d, k: t.amax(dim=d, keepdim=k),
    "amin": lambda t, d, k: t.amin(dim=d, keepdim=k),
    "argmax": lambda t, d, k: t.argmax(dim=d, keepdim=k),
    "argmin": lambda t, d, k: t.argmin(dim=d, keepdim=k),
    "logsumexp": lambda t, d, k: t.logsumexp(dim=d, keepdim=k),
    "softmax": lambda t, d, k: None if k else t.softmax(dim=d),
    "log_softmax": lambda t, d, k: None if k else t.log_softmax(dim=d),
    "cumsum": lambda t, d, k: None if k else t.cumsum(dim=d),
    "std": lambda t, d, k: t.std(dim=d, keepdim=k),
    "var": lambda t, d, k: t.var(dim=d, keepdim=k),
}
# The reductions that also fold a whole tensor into one number (called without dim).
_OVER_ALL: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "sum": torch.sum,
    "mean": torch.mean,
    "amax": torch.amax,
    "amin": torch.amin,
    "std": torch.std,
    "var": torch.var,
}


def _as_float(t) -> torch.Tensor | None:
    if isinstance(t, np.ndarray) and t.dtype.kind in "biuf":
        t = torch.from_numpy(t)  # a NumPy array is reduced as a tensor is (NumPy parity)
    if not isinstance(t, torch.Tensor) or t.is_meta or t.ndim < 2 or t.numel() > MAX_ELEMENTS:
        return None
    if t.layout != torch.strided or t.is_complex() or t.dtype == torch.bool:
        return None
    return t.detach().cpu().to(torch.float64)


def reduced(name: str, actual, expected, sources, tol=None) -> str | None:
    """The expected value is a reduction (sum, mean, max, softmax, ...) of one of ``sources``
    (``(label, tensor)``: the reference's tensors, or a call's inputs) over some dim, and the
    learner's value is the same reduction over another dim, or with keepdim the other way."""
    a, e = numeric(actual), numeric(expected)
    # One expected number matches some reduction of some tensor by chance (the largest of
    # three values is their amax): a reading needs several.
    if a is None or e is None or e.size < 2:
        return None
    tol = _tol(np.asarray(expected), tol)
    tried = 0
    for label, source in sources:
        t = _as_float(source)
        if t is None or str(label).startswith("_"):
            continue
        tried += 1
        if tried > MAX_SOURCES:
            break
        for op, f in _REDUCTIONS.items():
            found = _reduction_of(t, f, e, tol)
            if found is None:
                continue
            *found, c = found
            found = tuple(found)
            for dim in range(t.ndim):
                for keep in (False, True):
                    if (dim, keep) == found:
                        continue
                    other = f(t, dim, keep)
                    if other is not None and _match(a, c * other.numpy().astype(np.float64), tol):
                        return _reduction_sentence(name, str(label), op, found, (dim, keep), c)
            whole = _OVER_ALL.get(op)
            if whole is not None and a.size == 1 and _match(a.reshape(()), whole(t).numpy().astype(np.float64), tol):
                return (
                    f"{name} is {label}.{op}() where the reference computes {label}.{op}(dim={found[0]}"
                    f"{', keepdim=True' if found[1] else ''}): without dim, {op} folds every element into one number"
                )
    return None


def reduced_shape(name: str, actual_shape, expected_shape, sources) -> str | None:
    """Shapes only (the values tell nothing: the learner reduced something else of the same
    shape): the learner's shape is one of ``sources``' without one dim, and the expected shape
    is it without another, each dim the only one that gives that shape."""
    actual_shape, expected_shape = tuple(actual_shape), tuple(expected_shape)
    if len(actual_shape) != len(expected_shape) or actual_shape == expected_shape:
        return None
    for label, source in list(sources)[:MAX_SOURCES]:
        shape = tuple(getattr(source, "shape", ()))
        if str(label).startswith("_") or len(shape) != len(expected_shape) + 1:
            continue
        without = [shape[:d] + shape[d + 1 :] for d in range(len(shape))]
        mine = [d for d, s in enumerate(without) if s == actual_shape]
        theirs = [d for d, s in enumerate(without) if s == expected_shape]
        if len(mine) == 1 and len(theirs) == 1:
            dims = ", ".join(str(n) for n in shape)
            return (
                f"{name} has the shape of {label}, ({dims}), without dim {mine[0]}, where the expected value has it "
                f"without dim {theirs[0]}: consistent with reducing over dim {mine[0]} where dim {theirs[0]} was meant"
            )
    return None


def reversed_change(name: str, actual, expected, sources, tol=None) -> str | None:
    """The expected value is one of ``sources`` changed by some amount, and the learner's is
    that source changed by the same amount the other way (an update added where it is
    subtracted: W + lr * dW for W - lr * dW)."""
    a, e = numeric(actual), numeric(expected)
    if a is None or e is None or a.shape != e.shape:
        return None
    tol = _tol(np.asarray(expected), tol)
    for label, source in list(sources)[:MAX_SOURCES]:
        s = numeric(source)
        if s is None or s.shape != e.shape or str(label).startswith("_") or _match(e, s, tol):
            continue
        if _proportional(e, s, tol):
            continue  # expected = k * source (zeros too): "the other way" would be a coincidence of scale
        if _match(a - s, s - e, tol) and not _match(a, e, tol):
            return (
                f"{name} is {label} changed by the expected amount the other way: {name} - {label} is "
                f"-(expected - {label}) (a change added where it is subtracted, or the reverse: a sign)"
            )
    return None


def _proportional(e: np.ndarray, s: np.ndarray, tol) -> bool:
    """Whether ``e`` is one number times ``s`` (all zeros included)."""
    e64, s64 = e.astype(np.float64), s.astype(np.float64)
    norm = float((s64 * s64).sum())
    k = float((e64 * s64).sum()) / norm if norm else 0.0
    return _match(e64, k * s64, tol)


def multiplied(name: str, actual, expected, sources, tol=None) -> str | None:
    """The learner's value is the expected one multiplied, or divided, element by element by
    exactly one of ``sources`` of the same shape whose entries vary (a constant would be a
    factor, which :func:`explain` reads): ``y.backward(x)`` where ones were meant leaves
    ``x.grad`` as the expected gradient times ``x``."""
    a, e = numeric(actual), numeric(expected)
    if a is None or e is None or a.shape != e.shape or a.size < 2:
        return None
    tol = _tol(np.asarray(expected), tol)
    found = []
    for label, source in list(sources)[:MAX_SOURCES]:
        s = numeric(source)
        if s is None or s.shape != e.shape or str(label).startswith("_") or np.ptp(s) == 0:
            continue
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if _match(a, e * s, tol) and not _match(e, e * s, tol):
                found.append((label, "times"))
            elif (s != 0).all() and _match(a, e / s, tol) and not _match(e, e / s, tol):
                found.append((label, "divided by"))
    if len(found) != 1:  # two tensors that fit are two readings: neither is established
        return None
    label, how = found[0]
    extra = "too many" if how == "times" else "missing"
    cause = f"a factor {label} {extra}"
    if how == "times" and name.endswith(".grad"):
        cause = f"backward(gradient={label}) where the gradient of ones was meant, or {cause}"
    return f"{name} is the expected value {how} {label}, element by element: consistent with {cause}"


def _reduction_of(t: torch.Tensor, f, e: np.ndarray, tol):
    """(dim, keepdim, c): the expected value is c times the reduction of t over dim (c is 1
    for the reduction itself, 2 / n for the gradient of a mean of squares, say)."""
    for dim in range(t.ndim):
        for keep in (False, True):
            r = f(t, dim, keep)
            if r is None:
                continue
            r = r.numpy().astype(np.float64)
            if _match(e, r, tol):
                return dim, keep, 1.0
            if r.shape == e.shape and (r != 0).any():
                c = float(np.dot(r.ravel(), e.ravel()) / np.dot(r.ravel(), r.ravel()))
                if c != 0 and _match(e, c * r, tol):
                    return dim, keep, c
    return None


def _reduction_sentence(name: str, label: str, op: str, ref, mine, c: float = 1.0) -> str:
    def call(dim_keep):
        dim, keep = dim_keep
        text = f"{label}.{op}(dim={dim}{', keepdim=True' if keep else ''})"
        return text if c == 1.0 else f"{_num(c)} * {text}"

    if ref[0] == mine[0]:
        how = "keepdim=True is missing" if ref[1] else "keepdim=True is extra"
        return f"{name} is {call(mine)} where the reference computes {call(ref)}: {how}"
    return f"{name} is {call(mine)} where the reference computes {call(ref)}: {op} over the wrong dim"
