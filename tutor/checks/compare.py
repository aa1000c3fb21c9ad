"""Comparing a learner's value with the expected one, and saying how they differ.

Every comparison returns a list of :class:`Problem` (empty when equal); each problem
carries one sentence for the learner plus the expected and actual values as short text.
"""

import math
import numbers
from typing import Any, NamedTuple

import numpy as np
import torch

from . import causes, patterns, spans, swapped, wire
from .describe import (
    fmt_int,
    fmt_number,
    fmt_pair,
    fmt_shape,
    join_names,
    plural,
    short_repr,
    type_phrase,
)
from .vocabulary import TENSOR_PROPERTIES

DEFAULT_RTOL, DEFAULT_ATOL = 1e-5, 1e-8  # torch.isclose's defaults
DEVICE_HINT = "create it with device=DEVICE or move it with .to(DEVICE)"


class Problem(NamedTuple):
    prop: str
    sentence: str
    expected: str | None = None
    actual: str | None = None
    data: dict | None = None


def tolerance(rtol, atol):
    """None means exact equality; setting either one switches to closeness."""
    if rtol is None and atol is None:
        return None
    return (DEFAULT_RTOL if rtol is None else float(rtol), DEFAULT_ATOL if atol is None else float(atol))


# ---------------------------------------------------------------- arrays


def to_numpy(t: torch.Tensor) -> np.ndarray:
    t = t.detach()
    if t.layout != torch.strided:
        t = t.to_dense()
    t = t.resolve_conj().resolve_neg().cpu()
    try:
        return t.numpy()
    except (TypeError, RuntimeError):  # bfloat16, float8, complex32: no NumPy dtype
        return t.to(torch.complex128 if t.is_complex() else torch.float64).numpy()


def relation(name: str, actual, expected, tol=None) -> str | None:
    """How ``actual`` (a tensor or array) is ``expected`` transformed, where a known
    transformation reproduces it: another order, a factor, a sign, a ReLU, a dim added or
    dropped...; None otherwise."""
    a, e = (to_numpy(x) if isinstance(x, torch.Tensor) else x for x in (actual, expected))
    if not (isinstance(a, np.ndarray) and isinstance(e, np.ndarray)) or a.dtype.kind not in "biufc":
        return None
    if a.shape != e.shape:
        return causes.reshaped(name, a, e, tol)
    return (
        spans.zeros(name, a, e)
        or patterns.explain(name, a, e)
        or causes.explain(name, a, e, tol)
        or causes.normalised(name, a, e)
    )


def as_array(x):
    """A NumPy array for tensors, arrays, numbers and (nested) lists of numbers; else None."""
    try:
        if isinstance(x, torch.Tensor):
            return None if x.is_meta else to_numpy(x)
        if isinstance(x, np.ndarray):
            arr = x
        elif isinstance(x, (numbers.Number, np.generic, list, tuple)):
            if isinstance(x, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in x):
                arr = np.asarray([to_numpy(v) if isinstance(v, torch.Tensor) else v for v in x])
            else:
                arr = np.asarray(x)
        else:
            return None
    except Exception:
        return None
    return None if arr.dtype == object or arr.dtype.kind in "USV" else arr


def _common(a: np.ndarray, e: np.ndarray):
    kinds = {a.dtype.kind, e.dtype.kind}
    if kinds <= {"b"}:
        return a, e
    if kinds <= {"b", "i", "u"}:
        return a.astype(np.int64), e.astype(np.int64)
    if "c" in kinds:
        return a.astype(np.complex128), e.astype(np.complex128)
    return a.astype(np.float64), e.astype(np.float64)


def mismatch(a: np.ndarray, e: np.ndarray, tol=None):
    """None when equal, else counts, first indices and the largest absolute error."""
    a, e = _common(np.asarray(a), np.asarray(e))
    with np.errstate(invalid="ignore", over="ignore"):
        if tol is None:
            ok = a == e
            if a.dtype.kind in "fc":
                ok = ok | (np.isnan(a) & np.isnan(e))  # NaN where NaN is expected is right
        else:
            ok = np.isclose(a, e, rtol=tol[0], atol=tol[1], equal_nan=True)
        bad = ~np.asarray(ok, dtype=bool)
        count = int(bad.sum())
        if not count:
            return None
        first = [tuple(int(i) for i in row) for row in np.argwhere(bad)[:3]]
        err, nan = None, 0
        if a.dtype.kind != "b":
            diff = np.abs(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64) - e)[bad]
            known = diff[~np.isnan(diff)]
            err = float(known.max()) if known.size else float("nan")
            # NaN has no distance; count it instead of letting it vanish from the summary
            nan = int((np.isnan(a) & ~np.isnan(e))[bad].sum()) if a.dtype.kind in "fc" else 0
    return {
        "mismatched": count,
        "total": int(a.size),
        "first": first,
        "end": _one_end(bad) if a.ndim == 1 else None,
        "actual": a[first[0]].item(),
        "expected": e[first[0]].item(),
        "max_abs_error": err,
        "nan": nan,
    }


ONE_END_MIN = 16  # elements: in a shorter result the indices say as much


def _one_end(bad: np.ndarray) -> tuple[str, int] | None:
    """("last", start) where the differences fill the end of a 1-D result from ``start`` on
    (nine in ten of those elements differ) and everything before matches, ("first", stop) for
    its beginning: a part of a concatenation (a last layer, a first batch) done differently."""
    idx = np.flatnonzero(bad)
    n = bad.size
    # Said where it tells something: a result long enough, several differences, and a part
    # that matches of a tenth of it at least.
    if n < ONE_END_MIN or idx.size < 2 or n - idx.size < 0.1 * n:
        return None
    if idx[-1] == n - 1 and idx[0] > 0 and idx.size >= 0.9 * (n - idx[0]):
        return "last", int(idx[0])
    if idx[0] == 0 and idx[-1] < n - 1 and idx.size >= 0.9 * (idx[-1] + 1):
        return "first", int(idx[-1]) + 1
    return None


def _index(name: str, idx: tuple) -> str:
    return f"{name}[{', '.join(str(i) for i in idx)}]"


def mismatch_sentence(name: str, stats: dict) -> str:
    first = stats["first"][0]
    actual, expected = fmt_pair(stats["actual"], stats["expected"])
    pair = f"is {actual}, expected {expected}"
    if stats["total"] == 1:
        return f"{name if first == () else _index(name, first)} {pair}"
    where = ", ".join(str(i) if len(i) != 1 else str(i[0]) for i in stats["first"])
    sentence = (
        f"{name} differs from the expected values at {stats['mismatched']:,} of "
        f"{plural(stats['total'], 'element')} (first at {where}): {_index(name, first)} {pair}"
    )
    end = stats.get("end")
    if end is not None:
        side, at = end
        total = stats["total"]
        sentence += (
            f"; the differences are all in the last {plural(total - at, 'element')} (from {at} on), the first "
            f"{at:,} match"
            if side == "last"
            else f"; the differences are all in the first {plural(at, 'element')}, the last {total - at:,} (from {at} "
            "on) match"
        )
    if stats["max_abs_error"] is not None and not math.isnan(stats["max_abs_error"]):
        sentence += f"; max abs error {stats['max_abs_error']:.3g}"
    if stats.get("nan"):
        sentence += (
            f"; {plural(stats['nan'], 'value')} {'is' if stats['nan'] == 1 else 'are'} nan where a number is expected"
        )
    return sentence


def grad_multiple(a: np.ndarray, e: np.ndarray):
    """k when ``a`` is exactly k times ``e`` (k >= 2): the sign of accumulated gradients."""
    try:
        a, e = _common(np.asarray(a), np.asarray(e))
        if a.shape != e.shape or a.dtype.kind not in "fi":
            return None
        nonzero = e != 0
        if not nonzero.any() or np.any(a[~nonzero] != 0):
            return None
        ratios = a[nonzero] / e[nonzero]
        k = round(float(np.median(ratios)))
        if k >= 2 and np.allclose(ratios, k, rtol=1e-3, atol=0):
            return k
    except Exception:
        pass
    return None


# ---------------------------------------------------------------- tensors


def shares_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    try:
        sa, sb = a.untyped_storage(), b.untyped_storage()
        if a.device != b.device:
            return False
        ka, kb = wire.storage_key(a), wire.storage_key(b)
        if sa.data_ptr() != sb.data_ptr() and ka is not None and kb is not None:
            return ka == kb  # sent in different answers: the addresses they had there
        return sa.nbytes() > 0 and sa.data_ptr() == sb.data_ptr()
    except Exception:
        return False


def device_sentence(name: str, actual, expected, hint: str | None = None) -> str:
    if hint is None:
        hint = "move it with .cpu()" if expected.type == "cpu" and actual.type != "cpu" else DEVICE_HINT
    return f"{name} is on {actual}, expected {expected}: {hint}"


# Autograd facts go through wire.py: a tensor the learner's kernel sent carries them beside
# its data (a non-leaf's grad_fn cannot travel inside a tensor).
_grad_fn_name = wire.grad_fn_name


def _widened_back(actual, expected) -> bool:
    """A float tensor of a narrower dtype converted to a wider one: every value the same."""
    if actual.is_meta or expected.is_meta or not (actual.is_floating_point() and expected.is_floating_point()):
        return False
    if actual.dtype.itemsize <= expected.dtype.itemsize or actual.numel() == 0:
        return False
    try:
        a = actual.detach().cpu()
        if not torch.equal(a, expected.detach().cpu().to(actual.dtype)):
            return False
        # Whole numbers and short fractions are the same in every format: they tell nothing.
        mantissa, _ = torch.frexp(a.double())
        scaled = mantissa * 32
        return bool(((scaled != scaled.round()) & (a.double() != a.double().round())).any())
    except (RuntimeError, TypeError):
        return False


def _not_backpropagated(actual, name: str) -> Problem:
    """The expected value's graph was backpropagated through; ``actual``'s was not."""
    if _grad_fn_name(actual) is None:
        sentence = (
            f"{name} has no autograd graph (no grad_fn), so no backward() ran from it into the tensors it was "
            "computed from: compute it from tensors that require grad, and call backward() on it"
        )
    else:
        # a loss is backpropagated from itself; anything else through a result computed from it
        fix = f"call {name}.backward()" if actual.dim() == 0 else f"call backward() on a loss computed from {name}"
        if wire.backpropagated(actual) is False:
            sentence = (
                f"backward() never ran through {name}'s graph (the tensors its graph saved for backward are still "
                f"held): {fix}"
            )
        else:
            sentence = f"nothing shows that backward() ran through {name}'s graph: {fix}"
    return Problem("backpropagated", sentence, "backpropagated through", "not backpropagated through")


_grad = wire.grad_of


def _strides_differ(a: torch.Tensor, e: torch.Tensor) -> bool:
    # A stride along a dimension of size 1 never moves anywhere: it cannot matter.
    return any(size > 1 and sa != se for size, sa, se in zip(e.shape, a.stride(), e.stride(), strict=False))


def grad_problems(actual: torch.Tensor, expected: torch.Tensor, name: str, tol=None, sources=()) -> list:
    ag, eg = _grad(actual), _grad(expected)
    gname = f"{name}.grad"
    if ag is None and eg is None:
        return []
    if eg is None:
        return [Problem("grad", f"{gname} is set, expected None (no gradient)", "None", short_repr(ag))]
    if ag is None:
        if not wire.requires_grad(actual):
            hint = f"{name} does not require grad: create it with requires_grad=True"
        elif not wire.is_leaf(actual):
            # True whether retain_grad() never ran, ran after backward(), or ran on a tensor
            # the name held before it was rebuilt.
            hint = (
                f"{name} is not a leaf, and backward() keeps a non-leaf's .grad only where "
                f"retain_grad() was called on that very tensor before backward()"
            )
        else:
            # Said so it is true whether backward() never ran or a clear after it emptied .grad.
            hint = (
                "no gradient is left in it after your code (backward() on a result that depends on it "
                "fills it; a clear after backward() empties it again)"
            )
        return [Problem("grad", f"{gname} is None, expected a gradient: {hint}", short_repr(eg), "None")]
    if tuple(ag.shape) != tuple(eg.shape):
        return [
            Problem(
                "grad",
                f"{gname} has shape {fmt_shape(ag.shape)}, expected {fmt_shape(eg.shape)}",
                fmt_shape(eg.shape),
                fmt_shape(ag.shape),
            )
        ]
    if ag.is_meta or eg.is_meta:
        return []
    a, e = to_numpy(ag), to_numpy(eg)
    stats = mismatch(a, e, tol)
    if stats is None:
        return []
    k = grad_multiple(a, e)
    sentence = mismatch_sentence(gname, stats)
    if k:
        sentence += f" ({gname} is {k}x the expected gradient)"
    data = {"mismatch": stats, "grad_multiple": k, "name": gname}
    pattern = (
        None
        if k
        else spans.zeros(gname, a, e)
        or patterns.explain(gname, a, e)
        or causes.explain(gname, a, e, tol)
        or causes.multiplied(gname, a, e, sources, tol)
        or spans.spread(gname, a, e, sources, tol)
    )
    if pattern:
        data["pattern"] = pattern
    return [Problem("grad", sentence, short_repr(eg), short_repr(ag), data)]


def tensor_problems(
    actual: torch.Tensor,
    expected: torch.Tensor,
    name: str,
    compare,
    tol=None,
    device_hint: str | None = None,
    *,
    broadcast: bool = False,
    dtype_hint: str | None = None,
    sources=(),
) -> list:
    """The full diff on the properties in ``compare`` (in a fixed, readable order).

    Values of different shapes never match (even when ``compare`` leaves out ``shape``),
    unless ``broadcast``: then the two are compared after broadcasting against each other.
    ``sources`` (``(label, tensor)``) are tensors the expected value may be a reduction of
    (causes.reduced)."""
    out = []
    same_shape = tuple(actual.shape) == tuple(expected.shape)
    for prop in TENSOR_PROPERTIES:
        if prop not in compare:
            continue
        if prop == "shape" and not same_shape:
            a, e = fmt_shape(actual.shape), fmt_shape(expected.shape)
            pattern = None
            if "values" in compare and not (actual.is_meta or expected.is_meta):
                a_np, e_np = to_numpy(actual), to_numpy(expected)
                pattern = (
                    patterns.permuted(name, a_np, e_np)
                    or causes.reshaped(name, a_np, e_np, tol)
                    or causes.reduced(name, a_np, e_np, sources, tol)
                )
            pattern = pattern or causes.reduced_shape(name, actual.shape, expected.shape, sources)
            out.append(
                Problem("shape", f"{name} has shape {a}, expected {e}", e, a, {"pattern": pattern} if pattern else None)
            )
        elif prop == "dtype" and actual.dtype != expected.dtype:
            a, e = str(actual.dtype), str(expected.dtype)
            # Of another shape too, it may be another value altogether: no advice to convert it.
            advice = "" if not same_shape else f" (pass dtype={e} when creating it, or convert with .to({e}))"
            if same_shape and _widened_back(actual, expected):
                advice = (
                    f": its values are exactly the expected {e} values, held as {a}, consistent with a conversion "
                    f"to {e} and one back (a .float() or .to({a}) after it); keep the {e} result"
                )
            out.append(
                Problem(
                    "dtype",
                    f"{name} has dtype {a}, expected {e}: {dtype_hint}"
                    if dtype_hint
                    else f"{name} has dtype {a}, expected {e}{advice}",
                    e,
                    a,
                )
            )
        elif prop == "device" and not same_device(actual.device, expected.device):
            out.append(
                Problem(
                    "device",
                    device_sentence(name, actual.device, expected.device, device_hint),
                    str(expected.device),
                    str(actual.device),
                )
            )
        elif prop == "stride" and same_shape and _strides_differ(actual, expected):
            a, e = str(tuple(actual.stride())), str(tuple(expected.stride()))
            out.append(Problem("stride", f"{name}.stride() is {a}, expected {e}", e, a))
        elif prop == "contiguous" and actual.is_contiguous() != expected.is_contiguous():
            if expected.is_contiguous():
                sentence = f"{name} is not contiguous, expected a contiguous tensor (call .contiguous())"
            else:
                sentence = f"{name} is contiguous, expected a non-contiguous view (such as a transpose)"
            out.append(Problem("contiguous", sentence, str(expected.is_contiguous()), str(actual.is_contiguous())))
        elif prop == "storage_offset" and actual.storage_offset() != expected.storage_offset():
            ao, eo = actual.storage_offset(), expected.storage_offset()
            out.append(Problem("storage_offset", f"{name}.storage_offset() is {ao}, expected {eo}", str(eo), str(ao)))
        elif prop == "requires_grad" and wire.requires_grad(actual) != wire.requires_grad(expected):
            if wire.requires_grad(expected):
                hint = "create it with requires_grad=True (or call .requires_grad_())"
            else:
                hint = "detach it with .detach() or compute it under torch.no_grad()"
            out.append(
                Problem(
                    "requires_grad",
                    f"{name}.requires_grad is {wire.requires_grad(actual)}, expected {wire.requires_grad(expected)}: {hint}",
                    str(wire.requires_grad(expected)),
                    str(wire.requires_grad(actual)),
                )
            )
        elif prop == "is_leaf" and wire.is_leaf(actual) != wire.is_leaf(expected):
            if wire.is_leaf(expected):
                hint = "it should be created directly (or detached), not computed from tensors that require grad"
            else:
                hint = "it should be the result of an operation on tensors that require grad"
            out.append(
                Problem(
                    "is_leaf",
                    f"{name}.is_leaf is {wire.is_leaf(actual)}, expected {wire.is_leaf(expected)}: {hint}",
                    str(wire.is_leaf(expected)),
                    str(wire.is_leaf(actual)),
                )
            )
        elif prop == "grad_fn" and _grad_fn_name(actual) != _grad_fn_name(expected):
            a, e = _grad_fn_name(actual), _grad_fn_name(expected)
            sentence = f"{name}.grad_fn is {a}, expected {e}"
            if a is None:
                sentence += (
                    " (it has no autograd history: was it computed under no_grad, detached, "
                    "or from tensors that do not require grad?)"
                )
            out.append(Problem("grad_fn", sentence, str(e), str(a)))
        elif (
            prop == "backpropagated"
            and wire.backpropagated(expected) is True
            and wire.backpropagated(actual) is not True
        ):
            out.append(_not_backpropagated(actual, name))
        elif prop == "grad":
            out.extend(grad_problems(actual, expected, name, tol, sources))
        elif prop == "values" and not same_shape and not (actual.is_meta or expected.is_meta):
            problem = _shape_values_problem(actual, expected, name, compare, tol, broadcast)
            if problem:
                out.append(problem)
        elif prop == "values" and same_shape and not (actual.is_meta or expected.is_meta):
            if "dtype" in compare and _only_precision(actual, expected, tol):
                continue  # the dtype sentence says it all: these are the expected values at the other precision
            stats = mismatch(to_numpy(actual), to_numpy(expected), tol)
            if stats:
                data = {"mismatch": stats}
                if name.endswith(".grad"):
                    data.update(grad_multiple=grad_multiple(to_numpy(actual), to_numpy(expected)), name=name)
                a_np, e_np = to_numpy(actual), to_numpy(expected)
                # A gradient k times the expected one is accumulation's sign (the trace
                # decides what to say of it), not a cause's constant factor.
                pattern = (
                    spans.zeros(name, a_np, e_np)
                    or patterns.explain(name, a_np, e_np)
                    or (
                        None
                        if data.get("grad_multiple")
                        # a change from a value in play made the other way says more than how
                        # the two results differ
                        else causes.reversed_change(name, a_np, e_np, sources, tol)
                        or causes.explain(name, a_np, e_np, tol)
                        or causes.reduced(name, a_np, e_np, sources, tol)
                        or causes.multiplied(name, a_np, e_np, sources, tol)
                        or causes.normalised(name, a_np, e_np)
                        or spans.spread(name, a_np, e_np, sources, tol)
                    )
                )
                if pattern:
                    data["pattern"] = pattern
                out.append(
                    Problem("values", mismatch_sentence(name, stats), short_repr(expected), short_repr(actual), data)
                )
    return out


def _only_precision(actual: torch.Tensor, expected: torch.Tensor, tol) -> bool:
    """Floating tensors of different dtypes whose values differ by no more than the coarser
    dtype's rounding (a few of its eps)."""
    if actual.dtype == expected.dtype or not (actual.is_floating_point() and expected.is_floating_point()):
        return False
    eps = max(torch.finfo(actual.dtype).eps, torch.finfo(expected.dtype).eps) * 4
    rtol, atol = tol or (0.0, 0.0)
    return mismatch(to_numpy(actual), to_numpy(expected), (max(rtol, eps), max(atol, eps))) is None


def _shape_values_problem(actual, expected, name: str, compare, tol, broadcast: bool):
    a_shape, e_shape = fmt_shape(actual.shape), fmt_shape(expected.shape)
    if broadcast:
        try:
            a, e = np.broadcast_arrays(to_numpy(actual), to_numpy(expected))
        except ValueError:
            return Problem(
                "values",
                f"{name} has shape {a_shape}, which does not broadcast against the expected {e_shape}",
                e_shape,
                a_shape,
            )
        stats = mismatch(a, e, tol)
        if stats is None:
            return None
        return Problem("values", mismatch_sentence(name, stats), short_repr(expected), short_repr(actual))
    if "shape" in compare:
        return None  # the shape problem already says it
    return Problem(
        "values",
        f"{name} has shape {a_shape}, expected {e_shape}: its values cannot match the expected ones",
        e_shape,
        a_shape,
    )


def describe_match(t: torch.Tensor, compare) -> str:
    """'shape (3, 2), stride (1, 3)': what a passing tensor was checked for."""
    parts = []
    for prop in compare:
        if prop == "shape":
            parts.append(f"shape {fmt_shape(t.shape)}")
        elif prop == "dtype":
            parts.append(f"dtype {t.dtype}")
        elif prop == "device":
            parts.append(f"device {t.device}")
        elif prop == "stride":
            parts.append(f"stride {tuple(t.stride())}")
        elif prop == "contiguous":
            parts.append("contiguous" if t.is_contiguous() else "not contiguous")
        elif prop == "storage_offset":
            parts.append(f"storage offset {t.storage_offset()}")
        elif prop == "requires_grad":
            parts.append(f"requires_grad={wire.requires_grad(t)}")
        elif prop == "is_leaf":
            parts.append("a leaf" if wire.is_leaf(t) else "not a leaf")
        elif prop == "grad_fn":
            parts.append(f"grad_fn {_grad_fn_name(t)}")
        elif prop == "backpropagated":
            parts.append(
                "a graph backward() ran through" if wire.backpropagated(t) else "a graph backward() never ran through"
            )
        elif prop == "grad":
            parts.append("the expected gradient")
        elif prop == "values":
            parts.append("the expected values")
    return join_names(parts, limit=12)


# ---------------------------------------------------------------- any value


def _is_scalar(x) -> bool:
    return x is None or isinstance(x, (numbers.Number, np.generic, str, bytes, torch.dtype, torch.device))


def equal_by_expected(e, a):
    """``e == a`` answered by the expected value's own type, so an object of the learner's
    making cannot declare itself equal (its ``__eq__`` is never asked)."""
    eq: Any = type(e).__eq__
    result = eq(e, a)  # the unbound method: e's type decides, never a's
    return False if result is NotImplemented else result


def _numbers_equal(a, e, tol) -> bool:
    if isinstance(a, np.generic):
        a = a.item()
    if isinstance(e, np.generic):
        e = e.item()
    try:
        if equal_by_expected(e, a) is True:
            return True
        if isinstance(a, numbers.Real) and isinstance(e, numbers.Real) and math.isnan(a) and math.isnan(e):
            return True
        if tol is not None:
            return abs(a - e) <= tol[1] + tol[0] * abs(e)
    except Exception:
        pass
    return False


def same_device(a: torch.device, e: torch.device) -> bool:
    """torch.device('cuda') (DEVICE) names the same device as a tensor's 'cuda:0'."""
    if a.type != e.type:
        return False
    if a.index is None or e.index is None:
        current = torch.cuda.current_device() if a.type == "cuda" and torch.cuda.is_available() else 0
        return (a.index if a.index is not None else current) == (e.index if e.index is not None else current)
    return a.index == e.index


def _scalars_equal(a, e, tol) -> bool:
    if isinstance(a, torch.device) and isinstance(e, torch.device):
        return same_device(a, e)
    number = (numbers.Number, np.generic)
    if isinstance(a, number) and isinstance(e, number) and not isinstance(a, (str, bytes)):
        return _numbers_equal(a, e, tol)
    try:
        return equal_by_expected(e, a) is True
    except Exception:
        return False


def array_problems(actual, expected, name: str, tol=None) -> list:
    """Tensors, arrays and nested lists of numbers: shape, then values."""
    if isinstance(actual, torch.Tensor) and isinstance(expected, torch.Tensor) and (actual.is_meta or expected.is_meta):
        return tensor_problems(actual, expected, name, ("shape", "device"), tol)
    a, e = as_array(actual), as_array(expected)
    if a is None or e is None:
        return [
            Problem(
                "type",
                f"{name} is {type_phrase(actual)}, expected {type_phrase(expected)}",
                short_repr(expected),
                short_repr(actual),
            )
        ]
    if a.shape != e.shape:
        if (a.ndim == 0 and isinstance(actual, (numbers.Number, np.generic))) or (
            e.ndim == 0 and isinstance(expected, (numbers.Number, np.generic))
        ):
            return [
                Problem(
                    "value",
                    f"{name} is {short_repr(actual)}, expected {short_repr(expected)}",
                    short_repr(expected),
                    short_repr(actual),
                )
            ]
        sa, se = fmt_shape(a.shape), fmt_shape(e.shape)
        reshaped = causes.reshaped(name, a, e, tol)
        return [
            Problem(
                "shape", f"{name} has shape {sa}, expected {se}", se, sa, {"pattern": reshaped} if reshaped else None
            )
        ]
    stats = mismatch(a, e, tol)
    if stats is None:
        return []
    data = {"mismatch": stats}
    if name.endswith(".grad"):
        data.update(grad_multiple=grad_multiple(a, e), name=name)
    pattern = (
        spans.zeros(name, a, e)
        or patterns.explain(name, a, e)
        or (
            None
            if data.get("grad_multiple")
            else causes.explain(name, a, e, tol) or causes.normalised(name, a, e) or spans.spread(name, a, e, (), tol)
        )
    )
    if pattern:
        data["pattern"] = pattern
    sentence = mismatch_sentence(name, stats)
    if data.get("grad_multiple"):
        sentence += f" ({name} is {data['grad_multiple']}x the expected gradient)"
    return [Problem("values", sentence, short_repr(expected), short_repr(actual), data)]


def module_problems(actual: torch.nn.Module, expected: torch.nn.Module, name: str, tol=None) -> list:
    """Two modules are the same when their state_dicts are."""
    sa, se = actual.state_dict(), expected.state_dict()
    missing = [k for k in se if k not in sa]
    extra = [k for k in sa if k not in se]
    out = []
    if missing:
        out.append(
            Problem(
                "keys",
                f"{name} lacks {join_names(missing)} (expected in its state_dict)",
                join_names(se),
                join_names(sa),
            )
        )
    if extra:
        out.append(
            Problem(
                "keys",
                f"{name} has unexpected entries {join_names(extra)} in its state_dict",
                join_names(se),
                join_names(sa),
            )
        )
    for key, ev in se.items():
        if key in sa and isinstance(ev, torch.Tensor) and isinstance(sa[key], torch.Tensor):
            out.extend(tensor_problems(sa[key], ev, f"{name}.{key}", ("shape", "values"), tol))
        if len(out) >= 3:
            break
    return out


def _container(value) -> str | None:
    if isinstance(value, torch.Tensor):
        return "tensor"
    if isinstance(value, np.ndarray):
        return "array"
    if isinstance(value, list):
        return "list"
    if isinstance(value, tuple):
        return "tuple"  # torch.Size too: it is a tuple
    return None


def type_problems(actual, expected, name: str) -> list:
    """With strict_types: a list where a tuple (or a tensor) was expected differs, though
    value_problems lets equal values of these types match."""
    a, e = _container(actual), _container(expected)
    if a != e and (a is not None or e is not None):
        sentence = f"{name} is {type_phrase(actual)}, expected {type_phrase(expected)} (the exact type is checked)"
        return [Problem("type", sentence, type_phrase(expected), type_phrase(actual))]
    if a in ("list", "tuple") and len(actual) == len(expected):
        for i, (x, y) in enumerate(zip(actual, expected, strict=True)):
            found = type_problems(x, y, f"{name}[{i}]")
            if found:
                return found
    return []


def with_strict_types(problems: list, actual, expected, name: str) -> list:
    """``problems`` led by :func:`type_problems`; a type sentence of the lenient comparison
    that would repeat it is dropped."""
    typed = type_problems(actual, expected, name)
    return typed + [p for p in problems if not (typed and p.prop == "type")]


def crossed(actual, expected, name: str) -> Problem | None:
    """Two items of a sequence in each other's place, the rest as expected (swapped.py)."""
    pair = swapped.crossed_items(actual, expected)
    if pair is None:
        return None
    i, j = pair
    return Problem(
        "order",
        f"{name}[{i}] and {name}[{j}] are in each other's place: {name}[{i}] is what {name}[{j}] should be and "
        f"{name}[{j}] is what {name}[{i}] should be",
        f"{name}[{i}], {name}[{j}] in this order",
        "the other order",
    )


def _one_off(name: str, actual, expected) -> str | None:
    """An integer one more or one fewer than expected (neither of them 0, where "none at all"
    says more): a count off by one."""
    ints = all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in (actual, expected))
    if not ints or 0 in (actual, expected) or abs(int(actual) - int(expected)) != 1:
        return None
    more = "one more" if actual > expected else "one fewer"
    return (
        f"{name} is {more} than expected: consistent with something counted or done once too often or too few "
        f"times, such as a - 1 or + 1, < for <=, a range's start or end, a division rounded down where it should "
        f"round up (or the reverse), a call or a step once too many or too few, or a value measured one step early "
        f"or late; a number one off may also be a neighbour picked for another reason"
    )


def _numbers_relation(name: str, actual, expected, tol) -> str | None:
    """How a list of numbers is the expected list transformed (shifted by one, scaled, one
    item more), as for tensors; None for lists of anything but real numbers."""
    items = [*actual, *expected]
    if len(actual) < 3 or not all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in items):
        return None
    return relation(name, np.asarray(actual, dtype=float), np.asarray(expected, dtype=float), tol)


def value_problems(actual, expected, name: str, tol=None, depth: int = 0) -> list:
    """Equality that does what a learner means: Size vs tuple, tensor vs list, NaN vs NaN."""
    if isinstance(actual, torch.nn.Module) and isinstance(expected, torch.nn.Module):
        return module_problems(actual, expected, name, tol)
    if isinstance(actual, (torch.Tensor, np.ndarray)) or isinstance(expected, (torch.Tensor, np.ndarray)):
        return array_problems(actual, expected, name, tol)
    if _is_scalar(actual) and _is_scalar(expected):
        if _scalars_equal(actual, expected, tol):
            return []
        if isinstance(actual, torch.device) and isinstance(expected, torch.device):
            return [
                Problem(
                    "device",
                    device_sentence(name, actual, expected).replace(" is on ", " is ", 1),
                    str(expected),
                    str(actual),
                )
            ]
        number = (numbers.Number, np.generic)
        sa, se = _fmt_scalar(actual), _fmt_scalar(expected)
        sentence = f"{name} is {sa}, expected {se}"
        both_real = isinstance(actual, numbers.Real) and isinstance(expected, numbers.Real)
        pattern = (
            patterns.scale(name, actual, expected, ratios=True) if both_real and not isinstance(actual, bool) else None
        )
        pattern = pattern or _one_off(name, actual, expected)
        if both_real and not isinstance(actual, bool):
            pattern = patterns.dtype_constant(name, actual, expected) or pattern
        if pattern:
            return [Problem("value", sentence, se, sa, {"pattern": pattern})]
        if not (isinstance(actual, number) and isinstance(expected, number)) and type(actual) is not type(expected):
            sentence = f"{name} is {sa} ({type_phrase(actual)}), expected {se} ({type_phrase(expected)})"
        return [Problem("value", sentence, se, sa)]
    seq = (list, tuple)
    if isinstance(actual, seq) and isinstance(expected, seq):
        if all(_is_scalar(v) for v in actual) and all(_is_scalar(v) for v in expected):
            if len(actual) == len(expected) and all(
                _scalars_equal(a, e, tol) for a, e in zip(actual, expected, strict=False)
            ):
                return []
            sa, se = short_repr(actual), short_repr(expected)
            pattern = _numbers_relation(name, actual, expected, tol)
            return [
                Problem("value", f"{name} is {sa}, expected {se}", se, sa, {"pattern": pattern} if pattern else None)
            ]
        if len(actual) != len(expected):
            return [
                Problem(
                    "length",
                    f"{name} has {plural(len(actual), 'item')}, expected {fmt_int(len(expected))}",
                    short_repr(expected),
                    short_repr(actual),
                )
            ]
        order = crossed(actual, expected, name)
        if order is not None:
            return [order]
        out = []
        for i, (a, e) in enumerate(zip(actual, expected, strict=False)):
            out.extend(value_problems(a, e, f"{name}[{i}]", tol, depth + 1))
            if len(out) >= 3:
                break
        return out
    if isinstance(actual, dict) and isinstance(expected, dict):
        missing = [k for k in expected if k not in actual]
        extra = [k for k in actual if k not in expected]
        out = []
        if missing:
            out.append(
                Problem(
                    "keys",
                    f"{name} lacks the keys {join_names(map(repr, missing))}",
                    short_repr(list(expected)),
                    short_repr(list(actual)),
                )
            )
        if extra:
            out.append(
                Problem(
                    "keys",
                    f"{name} has unexpected keys {join_names(map(repr, extra))}",
                    short_repr(list(expected)),
                    short_repr(list(actual)),
                )
            )
        for k, e in expected.items():
            if k in actual:
                out.extend(value_problems(actual[k], e, f"{name}[{k!r}]", tol, depth + 1))
            if len(out) >= 3:
                break
        return out
    try:
        equal = equal_by_expected(expected, actual)
        if isinstance(equal, (torch.Tensor, np.ndarray)):
            equal = bool(equal.all())
        else:
            equal = bool(equal)
    except Exception:
        equal = False
    if equal:
        return []
    sa, se = short_repr(actual), short_repr(expected)
    if type(actual) is not type(expected):
        return [
            Problem("type", f"{name} is {sa} ({type_phrase(actual)}), expected {se} ({type_phrase(expected)})", se, sa)
        ]
    return [Problem("value", f"{name} is {sa}, expected {se}", se, sa)]


def _fmt_scalar(x) -> str:
    if isinstance(x, (numbers.Number, np.generic)) and not isinstance(x, bool):
        if isinstance(x, (float, np.floating)):
            return repr(float(x))
        return fmt_number(x)
    return short_repr(x)
