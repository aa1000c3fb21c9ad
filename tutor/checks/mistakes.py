"""Matching the exercise's authored mistakes (when / code / failed_check)."""

import ast

from .context import Context


def same_code(a: str, b: str) -> bool:
    """Equal ignoring comments and formatting: the parsed trees are compared."""
    try:
        return ast.dump(ast.parse(a or "")) == ast.dump(ast.parse(b or ""))
    except (SyntaxError, ValueError):
        return False


def _truthy(ctx: Context, expr: str) -> bool:
    try:
        return bool(ctx.eval_learner(expr))
    except Exception:  # includes 'ambiguous truth value' of a multi-element tensor
        return False


def matched_messages(mistakes, ctx: Context, code: str, failed_ids) -> list:
    """[(message, mistake id)] of the mistakes that match, each message once."""
    out: list = []
    for m in mistakes or []:
        if m.get("when"):
            hit = _truthy(ctx, m["when"])
        elif m.get("code") is not None:
            hit = same_code(code, m["code"])
        elif m.get("failed_check"):
            hit = m["failed_check"] in failed_ids
        else:
            hit = False
        if hit and m.get("message") and all(m["message"] != said for said, _ in out):
            out.append((m["message"], m.get("id")))
    return out
