"""raises checks: running an expression (or statements) must raise a given exception."""

import re

from ..context import Context, Outcome
from ..describe import exception_phrase, exception_text, short_repr
from ..namespaces import own_frames


def exception_matches(exc: BaseException, wanted: str) -> bool:
    """By class name along the MRO, so 'RuntimeError' also accepts its subclasses.

    A dotted name matches on its last part too ('torch.cuda.OutOfMemoryError' names the
    class torch.OutOfMemoryError)."""
    last = wanted.rsplit(".", 1)[-1]
    names = getattr(exc, "names", None) if type(exc).__name__ == "Raised" else None
    if names is not None:  # raised in the learner's kernel: its class names came as data
        qualnames = getattr(exc, "qualnames", ())
        return wanted in names or wanted in qualnames or ("." in wanted and last in names)
    for cls in type(exc).__mro__:
        if wanted in (cls.__name__, cls.__qualname__, f"{cls.__module__}.{cls.__qualname__}"):
            return True
        if "." in wanted and cls.__name__ == last:
            return True
    return False


def _missing_name(exc) -> bool:
    if type(exc).__name__ == "Raised":
        return exc.ename in ("NameError", "AttributeError") and exc.line is None
    return isinstance(exc, (NameError, AttributeError)) and not own_frames(exc)


def _at(exc) -> str:
    line = exc.line if type(exc).__name__ == "Raised" else (own_frames(exc)[-1].lineno if own_frames(exc) else None)
    return f" at line {line} of your code" if line else ""


def _ename(exc) -> str:
    return exc.ename if type(exc).__name__ == "Raised" else type(exc).__name__


def check_raises(check: dict, ctx: Context) -> Outcome:
    source = check["expr"]
    wanted = check["exception"]
    pattern = check.get("match")
    what = ctx.display(source, "the checked code")
    try:
        value = ctx.exec_learner(source)
    except Exception as exc:
        if not exception_matches(exc, wanted):
            if _missing_name(exc):
                message = ctx.explain(exc, source)  # the learner's object is missing, not wrong
            else:
                message = f"{what} raised {exception_phrase(exc)}{_at(exc)}, expected {wanted}"
            return Outcome(False, message, wanted, exception_phrase(exc), {"raised": _ename(exc)})
        text = exception_text(exc)
        if pattern and not re.search(pattern, text):
            return Outcome(
                False,
                f"{what} raised {exception_phrase(exc)}, but not the expected one: "
                f"its message should match '{pattern}'",
                f"{wanted} matching '{pattern}'",
                exception_phrase(exc),
                {"raised": _ename(exc)},
            )
        return Outcome(True, f"✓ {what} raises {_ename(exc)}", wanted, exception_phrase(exc))
    shown = "" if value is None else f" (it gave {short_repr(value, 80)})"
    return Outcome(
        False,
        f"{what} ran without error, expected {wanted}{shown}",
        wanted,
        "no error" if value is None else short_repr(value),
    )
