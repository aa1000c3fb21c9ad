"""A write into the result of a method that copied: ``t.flatten()[1] = 99`` or
``t.reshape(-1).mul_(2)`` where ``t``'s memory is not in the order the method needs, so
the method returned a new tensor and the write never reached ``t``.

Read from the learner's source and established from the learner's value: the method is
called again, in this process, on the value the name holds when the checks run (a plain
tensor as it crossed, with its strides), and only a result that shares no memory with it
is said to be a copy. Said only where the name is bound once, before that line, so the
value read is the one the line wrote through.
"""

import ast

import torch

# Tensor methods that return a view when they can and a copy when they cannot (or always copy).
MAY_COPY = frozenset(
    {"flatten", "reshape", "contiguous", "ravel", "clone", "float", "double", "half", "bfloat16", "cpu", "to"}
)
VIEW_WHEN_IT_CAN = frozenset({"flatten", "reshape", "contiguous", "ravel"})
MAX_STATEMENTS = 400


def _bindings(tree: ast.AST, name: str) -> list:
    """Line numbers of the statements that bind ``name`` at the top level of the code."""
    lines = []
    for stmt in getattr(tree, "body", []):
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
                lines.append(stmt.lineno)
                break
    return lines


def _copying_call(node: ast.AST) -> ast.Call | None:
    """``name.method(constants)`` with ``method`` in MAY_COPY, else None."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return None
    if node.func.attr not in MAY_COPY or not isinstance(node.func.value, ast.Name):
        return None
    args = [*node.args, *(k.value for k in node.keywords)]
    if not all(isinstance(a, ast.Constant) or _negative(a) for a in args):
        return None
    return node


def _negative(node: ast.AST) -> bool:
    return isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant)


def _writes(tree: ast.AST):
    """(statement, call) for each top-level statement that writes into a MAY_COPY call's result:
    an item assignment (``t.flatten()[1] = 99``, ``+=``) or an in-place method on it."""
    for stmt in getattr(tree, "body", [])[:MAX_STATEMENTS]:
        targets = []
        if isinstance(stmt, ast.Assign):
            targets = stmt.targets
        elif isinstance(stmt, ast.AugAssign):
            targets = [stmt.target]
        for target in targets:
            if isinstance(target, ast.Subscript):
                call = _copying_call(target.value)
                if call is not None:
                    yield stmt, call
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            func = stmt.value.func
            if isinstance(func, ast.Attribute) and func.attr.endswith("_") and not func.attr.startswith("_"):
                inner = func.value.value if isinstance(func.value, ast.Subscript) else func.value
                call = _copying_call(inner)
                if call is not None:
                    yield stmt, call


def lost_writes(code: str, values: dict) -> list:
    """At most one sentence: a line of the code that writes into a copy of a tensor it meant
    to change. ``values``: the learner's names as the checks see them."""
    try:
        tree = ast.parse(code or "")
    except SyntaxError:
        return []
    for stmt, call in _writes(tree):
        name = call.func.value.id
        value = values.get(name)
        if type(value) is not torch.Tensor or value.device.type == "meta":
            continue
        lines = _bindings(tree, name)
        if not lines or max(lines) >= stmt.lineno:
            continue  # bound after the write (or never by the code): not the value it wrote through
        try:
            result = eval(compile(ast.Expression(call), "<check>", "eval"), {"__builtins__": {}}, {name: value})
        except Exception:
            continue
        if not isinstance(result, torch.Tensor) or result.numel() == 0:
            continue
        if result.untyped_storage().data_ptr() == value.untyped_storage().data_ptr():
            continue  # a view: the write did reach the tensor
        method = call.func.attr
        why = (
            f" ({method}() returns a view only when {name}'s memory is laid out as it needs, and {name}'s is not)"
            if method in VIEW_WHEN_IT_CAN
            else ""
        )
        return [
            f"line {stmt.lineno} of your code writes into {ast.unparse(call)}, which is a new tensor here, not a "
            f"view of {name}{why}, so the write never reaches {name}: write through {name} itself or a view of it"
        ]
    return []
