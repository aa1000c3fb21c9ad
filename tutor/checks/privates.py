"""The setup's own state, which the learner's code has no business touching.

A lesson's setup (its prelude included) keeps what some checks read in the learner's
kernel under private names: a copy of the start values (``_w0``), a list of what it saw
(``_ROOTS``, or an attribute ``._roots`` on a function it wrapped), or in closure cells only.
Rebinding a helper the checks call is caught where the code ran; changing the state such
a helper reads (appending to its list, writing its dict) is not, and makes its answer
whatever the code wants. No exercise needs those names, so code that names one, as a
name, an attribute or text made of literals (given to ``getattr`` or ``globals()[...]``),
fails. So does code that reaches objects by way of the interpreter rather than by name
(a function's closure cells or globals, frames, the garbage collector's lists, ctypes,
trace and audit hooks), where the setup keeps such state: that is how the state is found
without naming it. Text computed otherwise (not made of literals) is not read here, and
still reaches what the learner's kernel holds (docs/trust.md).
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
    # So is a method or class attribute its own classes define (``def _backward(self)``).
    own = {n.attr for n in nodes if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)}
    for cls in (n for n in nodes if isinstance(n, ast.ClassDef)):
        for item in cls.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                own.add(item.name)
            elif isinstance(item, (ast.Assign, ast.AnnAssign)):
                targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                own.update(t.id for t in targets if isinstance(t, ast.Name))
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


# What reaches objects by way of the interpreter, not by name: closure cells and a
# function's globals, frames, the collector's lists of objects, raw memory, tracing hooks.
INTERNAL_ATTRIBUTES = frozenset(
    {
        "__closure__",
        "cell_contents",
        "__globals__",
        "f_back",
        "f_globals",
        "f_locals",
        "tb_frame",
        "gi_frame",
        "get_objects",
        "get_referrers",
        "get_referents",
        "_getframe",
        "currentframe",
        "getclosurevars",
        "getouterframes",
        "getinnerframes",
        "_current_frames",
        "settrace",
        "setprofile",
        "addaudithook",
    }
)
INTERNAL_MODULES = frozenset({"ctypes", "_ctypes"})


def internals(code: str) -> tuple[str, int] | None:
    """The first way of reaching objects through the interpreter the code names (an
    attribute, a name it imports, or literal text of one, as given to ``getattr``), with its
    line; None if none."""
    tree = _parsed(code)
    if tree is None:
        return None
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            name = node.attr if node.attr in INTERNAL_ATTRIBUTES else None
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            imported = [a.name for a in node.names] if isinstance(node, ast.ImportFrom) else []
            hits = [m for m in modules if m.split(".")[0] in INTERNAL_MODULES]
            hits += [n for n in imported if n in INTERNAL_ATTRIBUTES]
            name = hits[0] if hits else None
        elif isinstance(node, (ast.Constant, ast.BinOp, ast.JoinedStr)):
            text = folded(node)
            name = text if text in INTERNAL_ATTRIBUTES or text in INTERNAL_MODULES else None
        else:
            continue
        if name:
            found.append((node.lineno, node.col_offset, name))
    if not found:
        return None
    line, _, name = min(found)
    return name, line
