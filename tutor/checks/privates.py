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
without naming it. Code that looks attributes or names up by text computed at run time, or
runs text or a pickle as code, hides a name from the literal text read here: an attempt that
does so fails where it would otherwise pass (an honest solution may compute a name it
``setattr``s, and then is told to write it out).
"""

from __future__ import annotations

import ast
import functools
from typing import NamedTuple

from .dotted import dotted_name
from .kinds.source import _imported, folded


def _private(name: str) -> bool:
    return len(name) > 1 and name.startswith("_") and not name.startswith("__")


@functools.lru_cache(maxsize=32)  # a judge reads one learner's code several times, and every learner's setup
def _parsed(source: str) -> ast.AST | None:
    """The tree of ``source`` (shared: read it, never change it)."""
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


@functools.lru_cache(maxsize=32)
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


@functools.lru_cache(maxsize=32)
def read_when_called(*setups: str) -> frozenset[str]:
    """Global names the setups' functions (and lambdas, and methods) read when they are
    called, not when they are defined: looked up then in the namespace the learner's code
    ran in, so a name the code rebinds changes what the exercise's own helpers do."""
    names: set[str] = set()
    for source in setups:
        tree = _parsed(source or "")
        if tree is None:
            continue
        for function in ast.walk(tree):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            body = function.body if isinstance(function.body, list) else [function.body]
            inner = [node for statement in body for node in ast.walk(statement)]
            local = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
            local |= {n.id for n in inner if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            declared = {name for n in inner if isinstance(n, ast.Global) for name in n.names}
            names.update(
                n.id
                for n in inner
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and (n.id not in local or n.id in declared)
            )
    return frozenset(names)


def names_in_checks(checks) -> frozenset[str]:
    """Every name the checks' texts (expressions, code, expected values, an oracle's name,
    an argument's transform) read: what of the namespace a check can call or look at."""
    names: set[str] = set()
    todo = [checks]
    while todo:
        value = todo.pop()
        if isinstance(value, dict):
            todo.extend(value.values())
        elif isinstance(value, (list, tuple)):
            todo.extend(value)
        elif isinstance(value, str) and value.strip():
            tree = _parsed(value) or _parsed(value.strip())
            if tree is None:
                continue
            names.update(n.id for n in ast.walk(tree) if isinstance(n, ast.Name))
    return frozenset(names)


@functools.lru_cache(maxsize=32)
def imported_at_module_level(source: str) -> frozenset[str]:
    """The names ``source``'s imports bind at module level (torch, F, np): modules, no state."""
    tree = _parsed(source or "")
    if tree is None:
        return frozenset()
    return frozenset(
        (alias.asname or alias.name).split(".")[0]
        for node in _module_level(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    )


@functools.lru_cache(maxsize=32)
def bound_at_module_level(source: str) -> frozenset[str]:
    """The names ``source`` binds at module level: assigned, defined, imported."""
    tree = _parsed(source or "")
    if tree is None:
        return frozenset()
    names: set[str] = set()
    for node in _module_level(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.Global):
            names.update(node.names)
    return frozenset(names)


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
        "getargvalues",
        "getmembers",
        "getmembers_static",
        "walk_stack",
        "walk_tb",
        "cr_frame",
        "ag_frame",
        "_current_frames",
        "settrace",
        "setprofile",
        "addaudithook",
    }
)
INTERNAL_MODULES = frozenset({"ctypes", "_ctypes"})
# inspect's stack() and trace() give frames (getargvalues() their locals) under names too
# common to count alone (torch.stack): they count as inspect's. Its getsource() and
# signature() read no object's state, and a lesson's hint may use them.
INSPECT_FRAMES = frozenset({"stack", "trace", "getframeinfo"})

# What reaches an attribute or a name by text computed at run time (``getattr(f,
# "".join(map(chr, codes)))``), or runs text or bytes as code (eval, a pickle's opcodes): the
# rules above read literal text, and these hide it from them. An honest solution may use some
# of them (setattr(block, name, ...) over names it computes), so the judge refuses them only
# in an attempt that would otherwise pass.
NAME_TAKING = frozenset({"getattr", "setattr", "delattr"})  # fine with a name made of literals
# (and the namespaces that a computed key reads a name from: globals()[key] is the setup's _held)
TEXT_RUNNING = frozenset(
    {"eval", "exec", "compile", "__import__", "breakpoint", "__builtins__", "vars", "globals", "locals"}
)
RUNTIME_ATTRIBUTES = frozenset(
    {
        "__getattribute__",
        "__setattr__",
        "__delattr__",
        "__dict__",
        "attrgetter",
        "methodcaller",
        "getattr_static",
        "import_module",
        *NAME_TAKING,
    }
)
RUNTIME_MODULES = frozenset({"builtins", "importlib", "marshal", "copyreg", "dill", "cloudpickle"})
PICKLE_MODULES = frozenset({"pickle", "_pickle", "cPickle"})
PICKLE_RUNNERS = frozenset({"load", "loads", "Unpickler"})  # pickle.UnpicklingError is no runner
UNPICKLING = {"weights_only": False, "allow_pickle": True}  # torch.load / numpy.load that run a pickle's code


def _literal_names(tree: ast.AST) -> set[str]:
    """Names every binding of which is literal text: ``name = "q"``, or a loop over a list or
    tuple of such texts (``for name in ("q", "v")``)."""
    bound: dict[str, bool] = {}

    def literals(node) -> bool:
        return isinstance(node, (ast.List, ast.Tuple, ast.Set)) and all(folded(e) is not None for e in node.elts)

    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name):
            name = node.target.id
            bound[name] = bound.get(name, True) and literals(node.iter)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    bound[target.id] = bound.get(target.id, True) and folded(node.value) is not None
    stored = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return {name for name, ok in bound.items() if ok} & stored


def _own_names(tree: ast.AST) -> set[str]:
    """Names the code binds itself to something else (``from torch import compile``, ``def
    eval(...)``, a parameter): not the builtins. An assignment does not count (``run = eval``
    and ``eval = eval`` are the builtin under a name)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] != "builtins":
            out.update(a.asname or a.name for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
    return out


def _runtime_node(node: ast.AST, parents: dict, literal_names: set[str], picklers: set[str]) -> str | None:
    if isinstance(node, ast.Name) and node.id in NAME_TAKING:
        call = parents.get(node)
        key = call.args[1] if isinstance(call, ast.Call) and call.func is node and len(call.args) >= 2 else None
        if key is not None and (folded(key) is not None or (isinstance(key, ast.Name) and key.id in literal_names)):
            return None
        return f"{node.id} with a name computed at run time"
    if isinstance(node, ast.Name) and node.id in TEXT_RUNNING:
        return node.id
    if isinstance(node, ast.Attribute) and node.attr in RUNTIME_ATTRIBUTES:
        return node.attr
    if isinstance(node, ast.Attribute) and node.attr in PICKLE_RUNNERS:
        module = node.value
        if isinstance(module, ast.Name) and module.id in picklers:
            return f"{module.id}.{node.attr}"
    if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in PICKLE_MODULES:
        hits = [a.name for a in node.names if a.name in PICKLE_RUNNERS]
        return f"{node.module}.{hits[0]}" if hits else None
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        hits = [m for m in modules if m.split(".")[0] in RUNTIME_MODULES]
        if isinstance(node, ast.ImportFrom):
            hits += [a.name for a in node.names if a.name in RUNTIME_ATTRIBUTES]
        return hits[0] if hits else None
    if isinstance(node, (ast.Constant, ast.BinOp, ast.JoinedStr)):
        # Text of a plain word ("eval", "compile") is no route by itself: reaching the builtin
        # it names takes builtins, __builtins__ or a namespace, which are found above.
        text = folded(node)
        if text in RUNTIME_ATTRIBUTES or text in RUNTIME_MODULES or text in ("__import__", "__builtins__"):
            return text
    if isinstance(node, ast.keyword) and node.arg in UNPICKLING:
        value = node.value
        if isinstance(value, ast.Constant) and value.value is UNPICKLING[node.arg]:
            return f"{node.arg}={value.value}"
    return None


def runtime_routes(code: str) -> tuple[str, int] | None:
    """The first way the code reaches attributes or names by text computed at run time, or
    runs text or a pickle as code (``getattr`` with a name not made of literals, ``eval``,
    ``vars``, ``pickle.loads``, ``weights_only=False``), with its line; None if none."""
    tree = _parsed(code)
    if tree is None:
        return None
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    literal_names = _literal_names(tree)
    picklers = set(PICKLE_MODULES) | {
        a.asname or a.name
        for n in ast.walk(tree)
        if isinstance(n, ast.Import)
        for a in n.names
        if a.name.split(".")[0] in PICKLE_MODULES
    }
    own = _own_names(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in own:
            continue  # the code's own compile or eval, not the builtin
        what = _runtime_node(node, parents, literal_names, picklers)
        if what:
            found.append((getattr(node, "lineno", 0), getattr(node, "col_offset", 0), what))
    if not found:
        return None
    line, _, what = min(found)
    return what, line


def internals(code: str) -> tuple[str, int] | None:
    """The first way of reaching objects through the interpreter the code names (an
    attribute, a name it imports, or literal text of one, as given to ``getattr``), with its
    line; None if none."""
    tree = _parsed(code)
    if tree is None:
        return None
    inspects = {"inspect"} | {
        a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names if a.name == "inspect"
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in INSPECT_FRAMES:
            owner = node.value
            if (isinstance(owner, ast.Name) and owner.id in inspects) or (
                isinstance(owner, ast.Attribute) and owner.attr == "inspect"
            ):
                found.append((node.lineno, node.col_offset, f"inspect.{node.attr}"))
        if isinstance(node, ast.ImportFrom) and node.module == "inspect":
            hits = [a.name for a in node.names if a.name in INSPECT_FRAMES]
            if hits:
                found.append((node.lineno, node.col_offset, f"inspect.{hits[0]}"))
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


# Methods that change the object they are called on (a dict's, a list's, a set's).
MUTATORS = frozenset(
    {
        "__setitem__",
        "__delitem__",
        "update",
        "setdefault",
        "pop",
        "popitem",
        "append",
        "extend",
        "insert",
        "remove",
        "add",
        "discard",
        "clear",
        "__iadd__",
        "__setattr__",
    }
)


def _torch_private(path: str | None) -> bool:
    """A dotted path into torch's private modules or objects (``torch._dynamo.utils.counters``)."""
    if not path:
        return False
    parts = path.split(".")
    return parts[0] == "torch" and any(_private(p) for p in parts[1:])


def _peeled(node: ast.AST) -> ast.AST:
    """The object a subscript or an attribute chain ends on: counters["stats"]["x"] -> counters."""
    while isinstance(node, ast.Subscript):
        node = node.value
    return node


def torch_state_writes(code: str, setup: str = "") -> tuple[str, int] | None:
    """The first place the code changes state kept in torch's private modules (an assignment,
    ``del`` or a mutating method on ``torch._dynamo.utils.counters``, reached by name, import
    or a name bound to it, by the code or by the ``setup`` it runs after), with its line; None
    if none. Calls of torch's private functions (``torch._dynamo.reset()``, ``mark_dynamic``)
    are no writes."""
    tree = _parsed(code)
    if tree is None:
        return None
    given = _parsed(setup or "")
    names = {**(_imported(given) if given is not None else {}), **_imported(tree)}

    def resolved(node: ast.AST) -> str | None:
        dotted = dotted_name(_peeled(node))
        if not dotted:
            return None
        root, _, rest = dotted.partition(".")
        if root in names:
            return names[root] + ("." + rest if rest else "")
        return dotted

    # names bound to such state (c = torch._dynamo.utils.counters; stats = c["stats"])
    for _ in range(3):
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                path = resolved(node.value)
                if _torch_private(path) and node.targets[0].id not in names:
                    names[node.targets[0].id] = path or ""
    found: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        targets: list = []
        if isinstance(node, ast.Assign):
            targets = [t for t in node.targets if not isinstance(t, ast.Name)]
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target] if not isinstance(node.target, ast.Name) or node.target.id in names else []
        elif isinstance(node, ast.Delete):
            targets = list(node.targets)
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in MUTATORS:
                targets = [func.value]
            elif isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and node.args:
                targets = [node.args[0]]
        for target in targets:
            base = target.value if isinstance(target, ast.Attribute) else target
            path = resolved(target) if isinstance(target, ast.Name) else resolved(base)
            if path and _torch_private(path):
                found.append((getattr(node, "lineno", 0), getattr(node, "col_offset", 0), path))
    if not found:
        return None
    line, _, where = min(found)
    return where, line
