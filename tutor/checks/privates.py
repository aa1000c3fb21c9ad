"""The setup's own state, which the learner's code has no business touching.

A lesson's setup (its prelude included) keeps what some checks read in the learner's
kernel under private names: a copy of the start values (``_w0``), the backward() calls it
remembered (``_BACKWARD_ROOTS``, an attribute ``._roots`` on the function it wrapped).
Rebinding a helper the checks call is caught where the code ran; changing the state such
a helper reads (appending to its list, writing its dict) is not, and makes its answer
whatever the code wants. No exercise needs those names, so code that names one, as a
name, an attribute or text made of literals (given to ``getattr`` or ``globals()[...]``),
fails. Text computed otherwise is not read here: like frames and the garbage collector, it
reaches what the learner's kernel holds (docs/trust.md).
"""

from __future__ import annotations

import ast
from typing import NamedTuple

from .kinds.source import folded


def _private(name: str) -> bool:
    return len(name) > 1 and name.startswith("_") and not name.startswith("__")


def _parsed(source: str) -> ast.AST | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


class Privates(NamedTuple):
    names: frozenset[str]  # bound as names (``_w0``)
    attributes: frozenset[str]  # set as attributes of objects other than ``self`` (``._roots``)


def _module_level(tree: ast.AST) -> list[ast.AST]:
    """The nodes of the module's own statements, not of a function's or a class's body (a
    helper's local ``_tmp`` is no state of the namespace, and a learner may use the name)."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = list(ast.iter_child_nodes(tree))
    while todo:
        node = todo.pop()
        out.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))
    return out


def of_setup(*setups: str) -> Privates:
    """Private names the setups bind at module level (or declare global), and private
    attributes they set anywhere on objects other than ``self`` (an instance's own fields are
    its class's business)."""
    names: set[str] = set()
    attributes: set[str] = set()
    for source in setups:
        tree = _parsed(source or "")
        if tree is None:
            continue
        for node in _module_level(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and _private(node.id):
                names.add(node.id)
        for node in ast.walk(tree):
            if isinstance(node, ast.Global):
                names.update(name for name in node.names if _private(name))
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _private(node.attr):
                on_self = isinstance(node.value, ast.Name) and node.value.id == "self"
                if not on_self:
                    attributes.add(node.attr)
    return Privates(frozenset(names), frozenset(attributes))


def reached(code: str, privates: Privates) -> tuple[str, int] | None:
    """The first private name or attribute the code names, with its line; None if none."""
    tree = _parsed(code) if privates.names or privates.attributes else None
    nodes = list(ast.walk(tree)) if tree is not None else []
    # An attribute the code sets itself is its own object's field (a Value's ._backward in a
    # tiny autograd engine), whatever the setup's objects call theirs.
    own = {n.attr for n in nodes if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)}
    attributes = privates.attributes - own
    found = []
    for node in nodes:
        if isinstance(node, ast.Name):
            hit = node.id in privates.names
            name = node.id
        elif isinstance(node, ast.Attribute):
            hit = node.attr in attributes
            name = node.attr
        elif isinstance(node, (ast.Constant, ast.BinOp, ast.JoinedStr)):
            name = folded(node) or ""  # text made of literals only ("_ro" + "ots")
            hit = name in privates.names or name in attributes
        else:
            continue
        if hit:
            found.append((node.lineno, node.col_offset, name))
    if not found:
        return None
    line, _, name = min(found)
    return name, line
