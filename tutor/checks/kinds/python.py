"""python checks: the escape hatch. Statements (usually asserts) run against the learner's
namespace, with the reference namespace as ``ref``; the code is never shown."""

import types

from ..context import Context, Outcome
from ..namespaces import own_frames


def check_python(check: dict, ctx: Context) -> Outcome:
    ref = types.SimpleNamespace(**{k: v for k, v in ctx.ref.items() if not k.startswith("__")})
    try:
        ctx.exec_learner(check["code"], {"ref": ref})
    except AssertionError as exc:
        # The runner puts the authored message first; the assert's own text follows it.
        if own_frames(exc):  # raised inside the learner's own function, not by the check's assert
            return Outcome(False, ctx.explain(exc, check["code"], shown=False))
        return Outcome(False, str(exc).strip())
    except Exception as exc:
        return Outcome(False, ctx.explain(exc, check["code"], shown=False), details={"raised": type(exc).__name__})
    return Outcome(True, f"✓ {check.get('id') or 'check'} passed")
