"""Lists the learner's code left empty where the reference's same name holds items: what
the code's source says about them (no line adds to the list, or the one that does never ran).

Said only where the source settles it: every binding of the name is an empty list and
nothing else could have filled or emptied it (the list passed to a call, rebound, cleared).
"""

import ast

from .describe import plural

# Methods that add to a list; any other method call on it (pop, clear, remove) or the list
# passed to a call could change it in ways the source does not show.
ADDS = frozenset({"append", "extend", "insert"})
MAX_NAMES = 200


def _parents(tree: ast.AST) -> dict:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _empty_list(node) -> bool:
    if isinstance(node, ast.List) and not node.elts:
        return True
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "list"
        and not node.args
        and not node.keywords
    )


# Builtins that only read a list they are given (len(losses), min(losses), print(losses)).
READERS = frozenset({"len", "min", "max", "sum", "print", "sorted", "any", "all", "str", "repr", "enumerate", "zip"})
# Where a plain read of the name leaves the list as it is and makes no alias of it.
_READS = (
    ast.Compare,
    ast.FormattedValue,
    ast.BinOp,
    ast.UnaryOp,
    ast.BoolOp,
    ast.IfExp,
    ast.If,
    ast.While,
    ast.Assert,
    ast.Expr,
    ast.For,
    ast.comprehension,
)


def _bound_empty(node: ast.Name, parents: dict) -> bool:
    """``name = []``, or ``a, name = [], []``."""
    parent = parents.get(node)
    if isinstance(parent, ast.Assign) and parent.targets == [node]:
        return _empty_list(parent.value)
    assign = parents.get(parent)
    if isinstance(parent, ast.Tuple) and isinstance(assign, ast.Assign) and assign.targets == [parent]:
        values = assign.value
        if isinstance(values, (ast.Tuple, ast.List)) and len(values.elts) == len(parent.elts):
            return _empty_list(values.elts[parent.elts.index(node)])
    return False


def adds(tree: ast.AST, name: str) -> tuple[list, int, bool]:
    """(the (line, method) of each ``name``.append/extend/insert call, how many statements
    bind ``name`` to an empty list, whether anything else could change or alias it)."""
    parents = _parents(tree)
    calls: list = []
    bindings = 0
    other = any(isinstance(n, ast.arg) and n.arg == name for n in ast.walk(tree))  # a parameter: another list
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Name) and node.id == name):
            continue
        parent = parents.get(node)
        if isinstance(node.ctx, ast.Store):
            if _bound_empty(node, parents):
                bindings += 1
            else:
                other = True  # a loop variable, an unpacking, a rebinding to a value
        elif isinstance(node.ctx, ast.Del):
            other = True
        elif isinstance(parent, ast.Attribute):
            call = parents.get(parent)
            if isinstance(call, ast.Call) and call.func is parent:
                if parent.attr in ADDS:
                    calls.append((parent.lineno, parent.attr))
                else:
                    other = True  # pop, clear, remove, ... or a method we cannot read
        elif isinstance(parent, ast.Call):
            reader = isinstance(parent.func, ast.Name) and parent.func.id in READERS
            other = other or not reader  # passed to a function, which may fill it
        elif isinstance(parent, ast.Subscript):
            other = other or not isinstance(parent.ctx, ast.Load)
        elif not isinstance(parent, _READS):
            other = True  # bound to another name, returned, put in a container: an alias
    return sorted(calls), bindings, other


def _parse(source: str):
    try:
        return ast.parse(source or "")
    except SyntaxError:
        return None


def _bound_at_top(tree: ast.Module, name: str) -> bool:
    """Whether a statement of the module itself (not in a loop or a function) binds ``name``."""
    for statement in tree.body:
        if isinstance(statement, ast.Assign):
            targets = ast.walk(statement.targets[0])
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return True
    return False


def unfilled(learner: dict, ref: dict, code: str, solution: str, raised: bool) -> list:
    """Sentences for the learner's empty lists the reference fills. ``raised``: the code
    stopped with an exception, so a line it has may simply not have been reached yet."""
    mine_tree, their_tree = _parse(code), _parse(solution)
    if mine_tree is None:
        return []
    out = []
    for i, (name, theirs) in enumerate(ref.items()):
        if i > MAX_NAMES:
            break
        mine = learner.get(name) if not name.startswith("_") else None
        if type(mine) is not list or mine or type(theirs) is not list or not theirs:
            continue
        calls, bindings, other = adds(mine_tree, name)
        if other:
            continue  # bindings == 0: the setup made the list
        reference_appends = their_tree is not None and any(m == "append" for _, m in adds(their_tree, name)[0])
        if not calls:
            out.append(never_added(name, len(theirs), reference_appends))
        elif bindings == 1 and not raised and _bound_at_top(mine_tree, name):
            # bound once, before anything else ran, and never emptied: no append can have run
            out.append(never_reached(name, len(theirs), calls))
    return out


def never_added(name: str, n: int, reference_appends: bool) -> str:
    how = f" (the reference calls {name}.append(...))" if reference_appends else ""
    return (
        f"{name} is empty, where the reference's holds {plural(n, 'item')}: no line of your code appends or adds "
        f"anything to it{how}"
    )


def never_reached(name: str, n: int, calls: list) -> str:
    line, method = calls[0]
    more = f" (and {len(calls) - 1} more)" if len(calls) > 1 else ""
    return (
        f"{name} is empty, where the reference's holds {plural(n, 'item')}: your code's {name}.{method}(...) at line "
        f"{line}{more} never ran"
    )
