"""Whether the learner's code writes a checked result as a literal: the one cause of a
failure on other data that can be read from the source and not guessed.

A pass in the first world and a failure in a further one says that something in the code
fits the first data only. That something is established as "typed in" only where the code
binds a checked name to a container of literal numbers (``y = torch.tensor([[1.5, ...]])``,
``shapes.append(torch.Size([5, 3]))``, ``order = [3, 0, 2]``); a single number (a learning
rate, a count) is a choice, not a copied result, and is left out.
"""

from __future__ import annotations

import ast
import re

# Calls that wrap a literal into a value: torch.tensor([...]), torch.Size([...]), np.array([...]).
_WRAPPERS = frozenset({"tensor", "as_tensor", "Size", "array", "asarray", "from_numpy"})
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_SOURCE = 200_000  # longer code is not read for this sentence


def _literal_numbers(node: ast.expr) -> int:
    """How many literal numbers ``node`` holds when it is a literal container (or a wrapper
    call of one); 0 when it holds anything computed."""
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        return _literal_numbers(node.args[0]) if name in _WRAPPERS and node.args else 0
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return 0
    return _count(value)


def _count(value: object, depth: int = 0) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, (int, float)):
        return 1
    if isinstance(value, (list, tuple)) and depth < 16:
        counts = [_count(v, depth + 1) for v in value]
        return sum(counts) if all(counts) else 0
    return 0


def literal_line(code: str, exprs: list[str]) -> tuple[str, int] | None:
    """(name, line) of the first statement of ``code`` that writes a checked name (the names
    ``exprs`` read) as a container of two or more literal numbers, or None."""
    names = {m.group(0) for expr in exprs for m in _NAME.finditer(expr or "")}
    if not names or len(code) > MAX_SOURCE:
        return None
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        target, value = None, None
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("append", "extend", "copy_")
            and isinstance(node.func.value, ast.Name)
            and node.args
        ):
            target, value = node.func.value.id, node.args[0]
        if target in names and value is not None and _literal_numbers(value) >= 2:
            found.append((node.lineno, target))  # type: ignore[attr-defined]
    if not found:
        return None
    line, name = min(found)
    return name, line
