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
    for cls in type(exc).__mro__:
        if wanted in (cls.__name__, cls.__qualname__, f"{cls.__module__}.{cls.__qualname__}"):
            return True
        if "." in wanted and cls.__name__ == last:
            return True
    return False


def check_raises(check: dict, ctx: Context) -> Outcome:
    source = check["expr"]
    wanted = check["exception"]
    pattern = check.get("match")
    what = ctx.display(source, "the checked code")
    try:
        value = ctx.exec_learner(source)
    except Exception as exc:
        if not exception_matches(exc, wanted):
            if isinstance(exc, (NameError, AttributeError)) and not own_frames(exc):
                message = ctx.explain(exc, source)  # the learner's object is missing, not wrong
            else:
                where = own_frames(exc)
                at = f" at line {where[-1].lineno} of your code" if where else ""
                message = f"{what} raised {exception_phrase(exc)}{at}, expected {wanted}"
            return Outcome(False, message, wanted, exception_phrase(exc), {"raised": type(exc).__name__})
        text = exception_text(exc)
        if pattern and not re.search(pattern, text):
            return Outcome(
                False,
                f"{what} raised {exception_phrase(exc)}, but not the expected one: "
                f"its message should match '{pattern}'",
                f"{wanted} matching '{pattern}'",
                exception_phrase(exc),
                {"raised": type(exc).__name__},
            )
        return Outcome(True, f"✓ {what} raises {type(exc).__name__}", wanted, exception_phrase(exc))
    shown = "" if value is None else f" (it gave {short_repr(value, 80)})"
    return Outcome(
        False,
        f"{what} ran without error, expected {wanted}{shown}",
        wanted,
        "no error" if value is None else short_repr(value),
    )
