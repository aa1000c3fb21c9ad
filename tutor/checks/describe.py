"""Short, learner-readable phrases for values, tensors and exceptions.

Everything shown to a learner goes through here so that a huge tensor or a list of a
million items never turns into a huge message (or a slow repr).
"""

import math
import numbers
import reprlib

import numpy as np
import torch

LIMIT = 200  # characters of any single repr shown in a message
SMALL = 24  # tensors with at most this many elements are shown in full

_repr = reprlib.Repr()
_repr.maxlevel = 4
_repr.maxlist = _repr.maxtuple = _repr.maxset = _repr.maxfrozenset = _repr.maxdeque = 12
_repr.maxdict = 8
_repr.maxstring = LIMIT
_repr.maxother = LIMIT
_repr.maxlong = 60


def shorten(text: str, limit: int = LIMIT) -> str:
    """One line, at most ``limit`` characters (tensor reprs span several lines)."""
    text = " ".join(str(text).split())
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text


def fmt_shape(shape) -> str:
    return str(tuple(int(s) for s in shape))


def dtype_name(dtype) -> str:
    """``float32`` rather than ``torch.float32``: for compact case descriptions."""
    return str(dtype).replace("torch.", "")


def fmt_int(n: int) -> str:
    return f"{int(n):,}"


def fmt_number(x) -> str:
    """A scalar as a learner would write it: 99.0, 0.125, 3, True."""
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, numbers.Integral):
        return str(int(x))
    if isinstance(x, numbers.Real):
        x = float(x)
        if math.isnan(x) or math.isinf(x):
            return str(x)
        if x.is_integer() and abs(x) < 1e15:
            return f"{x:.1f}"
        return f"{x:.6g}"
    if isinstance(x, numbers.Complex):
        return f"({fmt_number(x.real)}{'+' if float(x.imag) >= 0 else '-'}{fmt_number(abs(x.imag))}j)"
    return short_repr(x)


def fmt_pair(actual, expected) -> tuple[str, str]:
    """Two numbers with just enough digits that a learner sees they differ."""
    a, e = fmt_number(actual), fmt_number(expected)
    if a != e and not (isinstance(actual, numbers.Real) and isinstance(expected, numbers.Real)):
        return a, e
    if a == e and isinstance(actual, numbers.Real) and isinstance(expected, numbers.Real):
        for digits in range(7, 18):
            a, e = f"{float(actual):.{digits}g}", f"{float(expected):.{digits}g}"
            if a != e:
                break
    return a, e


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{fmt_int(n)} {word if n == 1 else (many or word + 's')}"


def join_names(names, limit: int = 6) -> str:
    """'a, b and c' (with 'and N more' past the limit)."""
    names = [str(n) for n in names]
    if len(names) > limit:
        rest = len(names) - limit
        names = [*names[:limit], f"{rest} more"]
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def tensor_summary(t: torch.Tensor) -> str:
    extra = ", requires_grad=True" if t.requires_grad else ""
    return f"tensor of shape {fmt_shape(t.shape)}, {t.dtype} on {t.device}{extra}"


def short_repr(value, limit: int = LIMIT) -> str:
    """A bounded, single-line repr; never raises."""
    try:
        if isinstance(value, torch.Tensor):
            if value.is_meta or value.numel() > SMALL or value.layout != torch.strided:
                text = tensor_summary(value)
            else:
                text = repr(value)
        elif isinstance(value, np.ndarray):
            if value.size > SMALL:
                text = f"array of shape {fmt_shape(value.shape)}, dtype {value.dtype}"
            else:
                text = "array(" + np.array2string(value, separator=", ") + ")"
        elif isinstance(value, torch.device):
            text = str(value)
        elif isinstance(value, torch.Size):
            text = fmt_shape(value)
        elif isinstance(value, torch.nn.Module):
            n = sum(p.numel() for p in value.parameters())
            text = f"{type(value).__name__} module with {plural(n, 'parameter')}"
        elif isinstance(value, (float, np.floating)) and not isinstance(value, bool):
            text = repr(float(value))
        else:
            text = _repr.repr(value)
    except Exception:
        text = f"<{type(value).__name__} object>"
    return shorten(text, limit)


def learner_type(value) -> str:
    """The class name a learner knows the value by: for what the judge holds in place of a
    learner's object (a proxy, an opaque value), the class it has in the learner's kernel."""
    learner = getattr(type(value), "learner_type", None)
    if learner is not None and not isinstance(value, type):
        try:
            return str(value.learner_type).rsplit(".", 1)[-1]
        except Exception:
            pass
    type_name = getattr(value, "type_name", None) if type(value).__name__ == "Opaque" else None
    return str(type_name).rsplit(".", 1)[-1] if type_name else type(value).__name__


def type_phrase(value) -> str:
    """'a list', 'an int', 'None': for 'x is a list, expected a tensor'."""
    if value is None:
        return "None"
    name = learner_type(value)
    if isinstance(value, torch.Tensor):
        name = "tensor"
    elif isinstance(value, np.ndarray):
        name = "NumPy array"
    article = "an" if name[:1].lower() in "aeiou" else "a"
    return f"{article} {name}"


def exception_text(exc: BaseException) -> str:
    """str(exc), or a note when the exception's own __str__ fails (learner classes can)."""
    try:
        text = str(exc)
    except Exception as err:
        return f"(its message cannot be shown: str() of it raised {type(err).__name__})"
    return text if type(text) is str else ""


def exception_phrase(exc: BaseException, limit: int = 160) -> str:
    """'ValueError: shapes do not match' (the first line of the message only). An error a
    DataLoader worker caught and raised again says only where it was caught in its first
    line: the worker's own error, the message's last line, is said instead."""
    text = exception_text(exc).strip()
    lines = text.splitlines()
    first = lines[0] if lines else ""
    name = getattr(exc, "ename", None) if type(exc).__name__ == "Raised" else None
    name = name or type(exc).__name__
    worker = first.startswith("Caught ") and " in DataLoader worker process " in first
    if worker and len(lines) > 1 and ":" in lines[-1]:
        where = first.removeprefix("Caught ").split(" in ", 1)[1].rstrip(".")
        return f"{shorten(lines[-1].strip(), limit)} (in {where})"
    return f"{name}: {shorten(first, limit)}" if first else name


def jsonable(obj, depth: int = 0):
    """Anything into plain JSON types (results cross a kernel boundary as JSON)."""
    if obj is None or isinstance(obj, bool):
        return obj
    if isinstance(obj, str):
        return str(obj)  # a str subclass (signatures.Scaled) as the plain text it holds
    if isinstance(obj, numbers.Integral) and not isinstance(obj, np.generic):
        return int(obj)
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else str(obj)
    if isinstance(obj, np.generic):
        return jsonable(obj.item(), depth)
    if depth > 24:  # a cycle or absurd nesting: stop, do not recurse forever
        return short_repr(obj)
    if isinstance(obj, dict):
        return {str(k): jsonable(v, depth + 1) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)) and not isinstance(obj, torch.Size):
        return [jsonable(v, depth + 1) for v in obj]
    if isinstance(obj, torch.Size):
        return [int(s) for s in obj]
    return short_repr(obj)
