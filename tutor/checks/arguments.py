"""A torch call the learner's code and the reference's both make once, with a setting that
differs: ``torch.optim.SGD(params, lr=0.1)`` where the reference's passes a momentum,
``F.mse_loss(out, y, reduction='sum')`` where the reference's keeps the default mean.

Both sources are read, never run. A call counts when its callee is a torch function or
class, named through the source's own imports (``import torch.nn.functional as F``) or the
usual ``torch``, ``nn``, ``F``, ``optim`` where the source binds no such name itself, and
when each source makes it exactly once (so the two are the same call). Its arguments are
bound to the callee's signature (``inspect``): a setting the code leaves out has the
signature's default. Only literal settings are compared (numbers, strings, booleans, None,
tuples of them); a setting given by a name or an expression is not read.

What the learner's call does is said in full; of the reference's only that it differs,
unless the reference's value is the signature's default (public, so it gives nothing away):
a hyperparameter may be what the exercise asks the learner to find.
"""

from __future__ import annotations

import ast
import inspect

import torch

from .describe import shorten
from .dotted import dotted_name

# Settings that change how, not what, a call computes.
IGNORED = frozenset({"foreach", "fused", "capturable", "differentiable", "inplace", "device", "dtype", "out"})
USUAL = {"torch": "torch", "nn": "torch.nn", "F": "torch.nn.functional", "optim": "torch.optim"}
_EMPTY = inspect.Parameter.empty
MAX_SAID = 3  # settings named for one call


class _Opaque:
    """A setting given by a name or an expression: not compared."""


OPAQUE = _Opaque()


def _aliases(tree: ast.AST) -> dict[str, str | None]:
    """Name -> the torch module or object it stands for (None: bound to something else)."""
    out: dict[str, str | None] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    out[alias.asname] = alias.name if alias.name.split(".")[0] == "torch" else None
                else:
                    top = alias.name.split(".")[0]
                    out[top] = top if top == "torch" else None
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                bound = alias.asname or alias.name
                out[bound] = f"{node.module}.{alias.name}" if node.module.split(".")[0] == "torch" else None
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.setdefault(node.name, None)
        elif isinstance(node, (ast.Name,)) and isinstance(node.ctx, ast.Store):
            out[node.id] = None
        elif isinstance(node, ast.arg):
            out.setdefault(node.arg, None)
    return out


def _qualified(func: ast.expr, aliases: dict) -> str | None:
    name = dotted_name(func)
    if name is None:
        return None
    head, _, rest = name.partition(".")
    base = aliases[head] if head in aliases else USUAL.get(head)
    if base is None:
        return None
    return f"{base}.{rest}" if rest else base


def _resolve(qualified: str):
    """The torch object a dotted name names, found by attributes from torch (nothing imported)."""
    head, *rest = qualified.split(".")
    if head != "torch":
        return None
    value: object = torch
    for part in rest:
        value = getattr(value, part, None)
        if value is None:
            return None
    return value if callable(value) else None


def _literal(node: ast.expr):
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return OPAQUE
    return value if _plain(value) else OPAQUE


def _plain(value) -> bool:
    if isinstance(value, tuple):
        return len(value) <= 8 and all(_plain(v) for v in value)
    return value is None or isinstance(value, (bool, int, float, str))


def _calls(source: str) -> dict[str, list[ast.Call]]:
    try:
        tree = ast.parse(source or "")
    except (SyntaxError, ValueError):
        return {}
    aliases = _aliases(tree)
    out: dict[str, list[ast.Call]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = _qualified(node.func, aliases)
            if name is not None:
                out.setdefault(name, []).append(node)
    return out


def _settings(call: ast.Call, signature: inspect.Signature) -> dict | None:
    """Each parameter's setting in ``call``: a literal, OPAQUE, or the default where it is not passed."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    try:
        bound = signature.bind_partial(*call.args, **{k.arg: k.value for k in call.keywords if k.arg})
    except TypeError:
        return None
    out = {}
    for name, param in signature.parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or name in IGNORED or name == "self":
            continue
        if name in bound.arguments:
            out[name] = _literal(bound.arguments[name])
        elif param.default is not _EMPTY and _plain(param.default):
            out[name] = param.default
        else:
            out[name] = OPAQUE
    return out


def _shown(value) -> str:
    return repr(value)


def _signature(target):
    try:
        return inspect.signature(target)
    except (TypeError, ValueError):
        return None


def other_settings(code: str, solution: str) -> list[tuple[str, str, list[str]]]:
    """(sentence, the callee's name, the settings it names) per torch call both sources make
    once with a literal setting that differs."""
    mine, theirs = _calls(code), _calls(solution)
    said = []
    for name in sorted(set(mine) & set(theirs)):
        if len(mine[name]) != 1 or len(theirs[name]) != 1:
            continue
        target = _resolve(name)
        signature = _signature(target) if target is not None else None
        if signature is None:
            continue
        ours, reference = _settings(mine[name][0], signature), _settings(theirs[name][0], signature)
        if ours is None or reference is None:
            continue
        parts, named = [], []
        for param, value in ours.items():
            other = reference.get(param, OPAQUE)
            if value is OPAQUE or other is OPAQUE or _same(value, other):
                continue
            default = signature.parameters[param].default
            passed = any(k.arg == param for k in mine[name][0].keywords) or _positional(mine[name][0], signature, param)
            own = f"passes {param}={_shown(value)}" if passed else f"leaves {param} at its default, {_shown(value)}"
            if default is not _EMPTY and _same(other, default):
                theirs_said = f"the reference's leaves it at its default, {_shown(other)}"
            else:
                theirs_said = f"the reference's passes another {param}"
            parts.append(f"{own}, where {theirs_said}")
            named.append(param)
        if parts:
            call = mine[name][0]
            short = name.rsplit(".", 1)[-1]
            text = (
                f"line {call.lineno} of your code, `{shorten(ast.unparse(call), 80)}`, "
                + "; ".join(parts[:MAX_SAID])
                + ("" if len(parts) <= MAX_SAID else f" (and {len(parts) - MAX_SAID} more settings of {short})")
            )
            said.append((text, short, named))
    return said


def _positional(call: ast.Call, signature: inspect.Signature, param: str) -> bool:
    names = [p for p in signature.parameters if p != "self"]
    return param in names[: len(call.args)]


def _same(a, b) -> bool:
    if {type(a), type(b)} == {bool, type(None)}:
        # A default of None read as "off" (DataLoader's shuffle): None and False are one
        # setting; None and True are not.
        return a is not True and b is not True
    if type(a) is bool or type(b) is bool:
        return a is b
    return a == b
