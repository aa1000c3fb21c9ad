"""Facts about the shape of the learner's code that the source alone establishes, said
when a check fails and the reference's code does not share them: a loop that can run its
body only once (a ``return`` or ``break`` as its last statement), a function that builds a
new optimizer each time it is called (its state, Adam's moments or SGD's momentum, then
starts empty on every call), a function that never returns a value, and a name the code
binds once to a constant and never again (a best loss that stays ``inf``).
"""

from __future__ import annotations

import ast

# Where an optimizer's or scaler's state lives across calls: a new one in each call forgets it.
STATEFUL = frozenset(
    {"SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "LBFGS", "GradScaler"}
)


def _tree(source: str) -> ast.AST | None:
    try:
        return ast.parse(source or "")
    except (SyntaxError, ValueError):
        return None


def _continues(loop: ast.stmt) -> bool:
    """Whether the loop's own body holds a ``continue`` (not one of a loop or function inside
    it): a pass that continues never reaches the exit at the end."""
    todo: list[ast.AST] = list(getattr(loop, "body", []))
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Continue):
            return True
        if not isinstance(node, (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))
    return False


def _loops_ending_in_exit(tree: ast.AST) -> list[tuple[ast.stmt, ast.stmt]]:
    """(loop, its exit) for each for/while whose body ends with a plain return or break that
    every pass reaches (no ``continue`` in the body)."""
    found: list[tuple[ast.stmt, ast.stmt]] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)) and node.body:
            last = node.body[-1]
            if isinstance(last, (ast.Return, ast.Break)) and not _continues(node):
                found.append((node, last))
    return found


def once_only(code: str, solution: str) -> str | None:
    """A loop of the learner's that ends with an unconditional return or break, where no loop
    of the reference's does: its body runs once at most."""
    mine, theirs = _tree(code), _tree(solution)
    if mine is None or theirs is None or _loops_ending_in_exit(theirs):
        return None
    for loop, exit_ in _loops_ending_in_exit(mine):
        kind = "while" if isinstance(loop, ast.While) else "for"
        text = ast.unparse(exit_)
        after = (
            "the first pass returns from the function" if isinstance(exit_, ast.Return) else "the first pass ends it"
        )
        return (
            f"the {kind} loop at line {loop.lineno} runs its body once at most: its last statement, `{text}` "
            f"(line {exit_.lineno}), is inside the loop, so {after}"
        )
    return None


def _functions(tree: ast.AST) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """Top-level functions and methods by name (the first of each name)."""
    out: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name not in out:
            out[node.name] = node
    return out


def _gives_a_value(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether the function's own body (not a nested function's) returns or yields a value."""
    todo: list[ast.AST] = list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Return) and node.value is not None:
            return True
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return True
        todo.extend(ast.iter_child_nodes(node))
    return False


def returns_nothing(code: str, solution: str) -> str | None:
    """A function of the learner's that never returns a value, where the reference's function
    of that name does: every call of it gives None."""
    mine, theirs = _tree(code), _tree(solution)
    if mine is None or theirs is None:
        return None
    reference = _functions(theirs)
    for name, fn in _functions(mine).items():
        if name.startswith("__") or name not in reference:
            continue
        if _gives_a_value(reference[name]) and not _gives_a_value(fn):
            return (
                f"your {name} (line {fn.lineno}) has no return statement with a value, so every call of it gives "
                f"None, where the reference's {name} returns a value"
            )
    return None


def _built_in_functions(tree: ast.AST) -> dict[str, tuple[str, int]]:
    """{function name: (the class it builds, line)} for stateful objects built in a function's body."""
    out: dict[str, tuple[str, int]] = {}
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
                if name in STATEFUL and fn.name not in out and not _keeps_nothing(name, node):
                    out[fn.name] = (name, node.lineno)
    return out


def _keeps_nothing(cls: str, call: ast.Call) -> bool:
    """Plain SGD (no momentum given, or 0) keeps nothing between steps: a new one each call
    steps as the same one would."""
    if cls != "SGD":
        return False
    momentum = next((k.value for k in call.keywords if k.arg == "momentum"), None)
    if momentum is None and len(call.args) > 2:
        momentum = call.args[2]
    return momentum is None or (isinstance(momentum, ast.Constant) and momentum.value in (0, 0.0))


def fresh_state_each_call(code: str, solution: str) -> str | None:
    """A function of the learner's that builds an optimizer (or a GradScaler) each time it
    runs, where the reference's function of that name builds none."""
    mine, theirs = _tree(code), _tree(solution)
    if mine is None or theirs is None:
        return None
    ours = _built_in_functions(theirs)
    reference_functions = {n.name for n in ast.walk(theirs) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for function, (cls, line) in _built_in_functions(mine).items():
        if function in reference_functions and function not in ours:
            return (
                f"your {function} builds a new {cls} each time it runs (line {line}): what it keeps between steps "
                f"(momentum, Adam's moment estimates, a scale) starts empty on every call, where the reference's "
                f"{function} builds none"
            )
    return None


SCALARS = (int, float, bool, type(None))


def _top_level_constant(node: ast.expr) -> bool:
    """A literal number, None or bool, or float("inf") and the like."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, SCALARS)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _top_level_constant(node.operand)
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("float", "int")
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Constant)
    )


def _bindings(tree: ast.AST) -> dict[str, list[ast.AST]]:
    """Every place a name is bound: assigned, augmented, a loop or with target, deleted,
    declared global or nonlocal (a function may then rebind it)."""
    out: dict[str, list[ast.AST]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.setdefault(node.id, []).append(node)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                out.setdefault(name, []).append(node)
    return out


RUNS_TEXT = frozenset({"exec", "eval", "globals", "locals", "vars", "setattr"})


def _shown(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else repr(value)


def bound_once(code: str, solution: str, learner: dict, ref: dict) -> str | None:
    """A top-level name the learner's code binds once, to a constant, and never again, that
    ends with that value where the reference's ends with another: the one place that could
    have changed it is not in the code."""
    mine, theirs = _tree(code), _tree(solution)
    if mine is None or theirs is None:
        return None
    if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in RUNS_TEXT for n in ast.walk(mine)):
        return None  # names bound by text: the source does not show every binding
    places = _bindings(mine)
    ref_places = _bindings(theirs)
    for stmt in getattr(mine, "body", []):
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
            continue
        name = stmt.targets[0].id
        if len(places.get(name, [])) != 1 or len(ref_places.get(name, [])) < 2 or not _top_level_constant(stmt.value):
            continue
        value, expected = learner.get(name), ref.get(name)
        if not (isinstance(value, SCALARS) and isinstance(expected, SCALARS)) or value == expected:
            continue
        return (
            f"{name} keeps the value line {stmt.lineno} gives it ({_shown(value)}): no line of your code assigns it "
            f"again, where the reference's ends at {_shown(expected)}"
        )
    return None


def _max_with_dim(node: ast.AST) -> bool:
    """``x.max(1)``, ``x.max(dim=1)``, ``torch.max(x, 1)``: a max along a dim, which gives
    (values, indices)."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute) or node.func.attr != "max":
        return False
    on_torch = isinstance(node.func.value, ast.Name) and node.func.value.id == "torch"
    given = len(node.args) - (1 if on_torch else 0) + sum(k.arg == "dim" for k in node.keywords)
    return given >= 1


def _max_values(tree: ast.AST) -> list[ast.expr]:
    """The places that take the values of a max along a dim: ``[0]`` or ``.values``."""
    out: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and _max_with_dim(node.value):
            if isinstance(node.slice, ast.Constant) and node.slice.value == 0:
                out.append(node)
        elif isinstance(node, ast.Attribute) and node.attr == "values" and _max_with_dim(node.value):
            out.append(node)
    return out


def _takes_positions(tree: ast.AST) -> bool:
    """Whether the source takes the positions of a maximum: argmax, ``.indices`` or ``[1]``
    of a max along a dim."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("argmax", "indices"):
            return True
        if isinstance(node, ast.Name) and node.id == "argmax":
            return True
        if (
            isinstance(node, ast.Subscript)
            and _max_with_dim(node.value)
            and isinstance(node.slice, ast.Constant)
            and node.slice.value == 1
        ):
            return True
    return False


def max_values_for_positions(code: str, solution: str) -> str | None:
    """The learner takes the largest values of a max along a dim where the reference takes
    their positions (argmax): values, not the class indices labels are compared with."""
    mine, theirs = _tree(code), _tree(solution)
    if mine is None or theirs is None or not _takes_positions(theirs) or _takes_positions(mine):
        return None
    found = _max_values(mine)
    if not found or _max_values(theirs):
        return None
    node = found[0]
    return (
        f"line {node.lineno} of your code, `{ast.unparse(node)}`, takes the largest values themselves, where the "
        f"reference takes their positions (argmax, or .indices of a max along a dim): the positions are the "
        f"class indices that labels are compared with; the values are scores"
    )
