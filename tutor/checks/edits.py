"""A statement of the learner's that is one of the reference's with one small edit, read
from the two sources: a reduction swapped (``.sum()`` for ``.mean()``), the operands of an
operation or the positional arguments of a call in the other order (``w @ x`` for
``x @ w``, ``zip(ys, xs)``), something off by one (``range(n - 1)``, ``<=`` for ``<``) or
another dim, a value computed in place where the reference's makes a new one (``p *= k``
for ``p = p * k``) or the reverse; or code that is the reference's statement for statement
but for one statement it lacks (``one_missing``) or runs in another place (``one_moved``).

What is established is the difference itself: the two statements are compared whole (a
loop's target with its iterable, an assignment's targets with its value), with the
learner's names, and they differ at that one place and nowhere else. Commutative
operations and symmetric functions (``a + b``, ``max(a, b)``) are never read as swapped, a
sum the learner's code divides afterwards is never read as a mean's replacement, and a
statement the reference also holds as written is no edit."""

import ast
import types

# How each sentence of this module begins its claim (benchmarks/feedback.py counts without them).
EDIT_PHRASE = "differs from the reference's matching statement only"
MISSING_PHRASE = "matches the reference's statement for statement but for one it lacks"
MOVED_PHRASE = "matches the reference's statement for statement but for their order"
EXTRA_PHRASE = "matches the reference's statement for statement but for one it adds"
PLACE_PHRASE = "is the one place it differs from the reference's"

# Functions and methods whose int arguments are dims.
DIM_FUNCTIONS = frozenset(
    {
        *("sum", "mean", "nansum", "nanmean", "prod", "std", "var", "max", "min", "amax", "amin", "argmax"),
        *("argmin", "softmax", "log_softmax", "logsumexp", "cumsum", "cumprod", "norm", "unsqueeze", "squeeze"),
        *("cat", "concatenate", "stack", "all", "any", "median", "sort", "argsort", "topk", "flip", "count_nonzero"),
        *("flatten", "unflatten", "narrow", "select", "index_select", "gather", "unbind", "movedim", "diff", "roll"),
    }
)
REDUCTIONS = {"sum": "mean", "mean": "sum", "nansum": "nanmean", "nanmean": "nansum"}
# Operations whose operands can change places without changing the result.
COMMUTATIVE = (ast.Add, ast.Mult, ast.BitAnd, ast.BitOr, ast.BitXor, ast.Eq, ast.NotEq, ast.Is, ast.IsNot)
# Functions whose two positional arguments can change places without changing the result.
SYMMETRIC = frozenset(
    {
        *("max", "min", "maximum", "minimum", "fmax", "fmin", "add", "mul", "multiply", "eq", "ne", "equal"),
        *("allclose", "isclose", "hypot", "logical_and", "logical_or", "logical_xor", "gcd", "lcm", "dist"),
        *("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "pairwise_distance", "assert_close"),
        *("transpose", "swapaxes", "swapdims"),
    }
)
# What makes ``a - b`` and ``b - a`` the same: an even function of the difference.
EVEN_METHODS = frozenset({"abs", "square", "norm", "absolute"})
# Calls whose number arguments are factors, terms, exponents or bounds of values, not counts,
# positions or sizes: a 3 where a 2 is meant there is another constant, not an off-by-one.
ARITHMETIC_CALLS = frozenset(
    {
        *("add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "multiply", "divide", "true_divide"),
        *("pow", "pow_", "float_power", "clamp", "clamp_", "clip", "clip_", "fmod", "remainder", "full"),
        *("full_like", "fill_", "lerp", "lerp_", "addcmul", "addcdiv", "power", "maximum", "minimum"),
    }
)
OFF_BY_ONE_OPS = {(ast.Lt, ast.LtE), (ast.LtE, ast.Lt), (ast.Gt, ast.GtE), (ast.GtE, ast.Gt)}
MAX_STATEMENTS = 400  # each side: past it, nothing is compared
MAX_MOVES_TRIED = 200  # statement pairs one_moved compares whole programs for


def _parts(stmt: ast.stmt) -> ast.AST | None:
    """What of a statement is compared: a simple statement whole, a compound one's header."""
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return ast.Tuple(elts=[stmt.target, stmt.iter], ctx=ast.Load())
    if isinstance(stmt, (ast.While, ast.If)):
        return stmt.test
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return ast.Tuple(elts=[i.context_expr for i in stmt.items], ctx=ast.Load())
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Try)):
        return None
    return stmt


def _statements(tree: ast.AST) -> list:
    return [(s, p) for s in ast.walk(tree) if isinstance(s, ast.stmt) and (p := _parts(s)) is not None]


def _same(a, b) -> bool:
    return ast.dump(a) == ast.dump(b) if isinstance(a, ast.AST) and isinstance(b, ast.AST) else a == b


def _differences(a, b, found: list) -> None:
    """Append to ``found`` each smallest place where ``a`` and ``b`` differ (a swap of two
    operands or arguments counts as one place); stop early once there are two."""
    if len(found) > 1:
        return
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            found.append((a, b))
            return
        for x, y in zip(a, b, strict=True):
            _differences(x, y, found)
        return
    if not (isinstance(a, ast.AST) and isinstance(b, ast.AST)):
        if a != b:
            found.append((a, b))
        return
    if type(a) is not type(b):
        found.append((a, b))
        return
    if _same(a, b):
        return
    inner: list = []
    for field in a._fields:
        if field in ("ctx", "type_comment"):
            continue
        _differences(getattr(a, field, None), getattr(b, field, None), inner)
        if len(inner) > 1:
            break
    if len(inner) == 1 and _leaf(inner[0][0]):
        found.append((a, b))  # an attribute's name, a constant's value, an operator: the node is the place
    elif len(inner) > 1 and _swap(a, b):
        found.append((a, b))
    else:
        found.extend(inner)


def _leaf(x) -> bool:
    """A name, a number or an operator: not a place of its own."""
    return not isinstance(x, (ast.AST, list)) or (isinstance(x, ast.AST) and not x._fields)


def _swap(mine: ast.AST, theirs: ast.AST) -> str | None:
    """ "operands" or "arguments" where ``mine`` is ``theirs`` with two of them in the other order."""
    if isinstance(mine, ast.BinOp) and isinstance(theirs, ast.BinOp):
        ordered = type(mine.op) is type(theirs.op) and not isinstance(mine.op, COMMUTATIVE)
        return "operands" if ordered and _same(mine.left, theirs.right) and _same(mine.right, theirs.left) else None
    if isinstance(mine, ast.Compare) and isinstance(theirs, ast.Compare):
        single = len(mine.ops) == len(theirs.ops) == 1 and type(mine.ops[0]) is type(theirs.ops[0])
        crossed = single and _same(mine.left, theirs.comparators[0]) and _same(mine.comparators[0], theirs.left)
        return "operands" if crossed and not isinstance(mine.ops[0], COMMUTATIVE) else None
    if isinstance(mine, (ast.Tuple, ast.List)) and type(mine) is type(theirs):
        return "items" if _crossed(mine.elts, theirs.elts) else None
    if not (isinstance(mine, ast.Call) and isinstance(theirs, ast.Call) and _same(mine.func, theirs.func)):
        return None
    name = mine.func.attr if isinstance(mine.func, ast.Attribute) else getattr(mine.func, "id", "")
    if name in SYMMETRIC or not _same(mine.keywords, theirs.keywords):
        return None
    return "arguments" if _crossed(mine.args, theirs.args) else None


def _crossed(mine: list, theirs: list) -> bool:
    """Whether ``mine`` is ``theirs`` with two of its entries in each other's place."""
    if len(mine) != len(theirs):
        return False
    moved = [i for i, (x, y) in enumerate(zip(mine, theirs, strict=True)) if not _same(x, y)]
    if len(moved) != 2:
        return False
    i, j = moved
    return _same(mine[i], theirs[j]) and _same(mine[j], theirs[i])


def _is_one(node) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int and node.value == 1


def _plus_minus_one(outer, inner) -> bool:
    """Whether ``outer`` is ``inner + 1`` or ``inner - 1``."""
    return (
        isinstance(outer, ast.BinOp)
        and isinstance(outer.op, (ast.Add, ast.Sub))
        and _is_one(outer.right)
        and _same(outer.left, inner)
    )


def _int(node) -> int | None:
    """The int a number written in the code stands for (``3``, ``-1``), else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def _dim(node: ast.AST, parents: dict) -> bool:
    """Whether the constant ``node`` is a dim: ``dim=``/``axis=``, or a positional argument
    of a function that takes dims."""
    parent = parents.get(node)
    if isinstance(parent, ast.keyword):
        return parent.arg in ("dim", "axis", "dims", "axes")
    if isinstance(parent, ast.Call) and node in parent.args:
        name = parent.func.attr if isinstance(parent.func, ast.Attribute) else getattr(parent.func, "id", "")
        return name in DIM_FUNCTIONS
    return False


def _kind(mine, theirs, parents: dict, sole: bool = False) -> str | None:
    """What the one difference is, or None for any other edit. ``sole``: the statement is
    the only difference between the two programs (``_sole``)."""
    if isinstance(mine, ast.Attribute) and isinstance(theirs, ast.Attribute) and _same(mine.value, theirs.value):
        return "reduction" if REDUCTIONS.get(mine.attr) == theirs.attr else None
    if _swap(mine, theirs):
        return "swap"
    if isinstance(mine, ast.Name) and isinstance(theirs, ast.Name):
        return "name"
    if _plus_minus_one(mine, theirs) or _plus_minus_one(theirs, mine):
        return "off-by-one"
    m, t = _int(mine), _int(theirs)
    if m is not None and t is not None:
        if _dim(mine, parents):
            # -1 and 1 may be the same dim (of a 2-D tensor): only dims counted from the same end
            # differ for sure, unless nothing else differs (sole: the failure must come from it)
            return "dim" if (m < 0) == (t < 0) or sole else None
        if _arithmetic(mine, parents):
            return "constant"  # h * 3 for h * 2: another factor, whatever their distance
        return "off-by-one" if abs(m - t) == 1 else None
    if isinstance(mine, ast.Compare) and isinstance(theirs, ast.Compare) and len(mine.ops) == len(theirs.ops) == 1:
        return "off-by-one" if (type(mine.ops[0]), type(theirs.ops[0])) in OFF_BY_ONE_OPS else None
    return _sign_or_operator(mine, theirs)


def _arithmetic(node: ast.AST, parents: dict) -> bool:
    """Whether the number ``node`` is an operand of arithmetic (``h * 2``, ``x ** 2``,
    ``x.clamp(0, 1)``), where it is a constant of the computation rather than a count,
    a position or a size (``range(n)``, ``x[:2]``, ``i < 2``, ``torch.zeros(2)``)."""
    parent = parents.get(node)
    if isinstance(parent, ast.BinOp):
        return True
    call = parents.get(parent) if isinstance(parent, ast.keyword) else parent
    if not isinstance(call, ast.Call):
        return False
    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
    return name in ARITHMETIC_CALLS


def _negated(a, b) -> bool:
    return isinstance(a, ast.UnaryOp) and isinstance(a.op, ast.USub) and _same(a.operand, b)


def _sign_or_operator(mine, theirs) -> str | None:
    """``y`` for ``-y`` (or the reverse), ``a + b`` for ``a - b``: "sign"; ``a / b`` for
    ``a * b``: "operator". The rest of both is the same, so the value differs by exactly that."""
    if _negated(mine, theirs) or _negated(theirs, mine):
        return "sign"
    if not (isinstance(mine, ast.BinOp) and isinstance(theirs, ast.BinOp)):
        return None
    if not (_same(mine.left, theirs.left) and _same(mine.right, theirs.right)):
        return None
    ops = {type(mine.op), type(theirs.op)}
    if ops == {ast.Add, ast.Sub}:
        return "sign"
    return "operator" if ops == {ast.Mult, ast.Div} else None


LIFTED = (ast.Constant, ast.Name, ast.UnaryOp, ast.BinOp, ast.Slice, ast.keyword)


def _lifts(node: ast.AST, parents: dict) -> int:
    """How many levels up a number that differs is quoted: to the call, index or comparison
    it is in."""
    steps = 0
    while isinstance(node, LIFTED) and isinstance(parents.get(node), (ast.expr, ast.keyword)):
        node, steps = parents[node], steps + 1
    return steps


def _up(node: ast.AST, parents: dict, steps: int) -> ast.AST:
    for _ in range(steps):
        node = parents.get(node, node)
    return node


def _op_text(node: ast.AST) -> str:
    return ast.unparse(node)


def _clipped(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _even(n) -> bool:
    return isinstance(n, ast.Constant) and type(n.value) is int and n.value % 2 == 0


def _sign_lost(node: ast.AST, parents: dict) -> bool:
    """Whether what ``node`` computes is taken through an even function (``abs(a - b)``,
    ``(a - b) ** 2``, ``(a - b).pow(2)``, ``.norm()``): its operands' order cannot matter."""
    parent = parents.get(node)
    if isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Pow) and parent.left is node:
        return _even(parent.right)
    if isinstance(parent, ast.Attribute) and parent.value is node:
        call = parents.get(parent)
        if parent.attr in EVEN_METHODS:
            return True
        return parent.attr == "pow" and isinstance(call, ast.Call) and bool(call.args) and _even(call.args[0])
    if isinstance(parent, ast.Call) and node in parent.args:
        name = parent.func.attr if isinstance(parent.func, ast.Attribute) else getattr(parent.func, "id", "")
        return name in EVEN_METHODS or name in SYMMETRIC
    return False


def _unordered(node: ast.AST, parents: dict) -> bool:
    """Whether the items of ``node`` are read as a collection whose order cannot matter:
    ``isinstance(x, (int, float))``, ``x in (a, b)``, ``except (A, B)``."""
    parent = parents.get(node)
    if isinstance(parent, ast.Compare) and node in parent.comparators:
        return all(isinstance(op, (ast.In, ast.NotIn)) for op in parent.ops)
    if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name):
        return parent.func.id in ("isinstance", "issubclass", "set", "frozenset")
    return isinstance(parent, ast.ExceptHandler)


def _scalar(node: ast.AST, values: dict) -> bool:
    """Whether ``node`` names a value of the learner's with one element: its sum is its mean."""
    if not isinstance(node, ast.Name) or node.id not in values:
        return False
    numel = getattr(values[node.id], "numel", None)
    try:
        return callable(numel) and numel() == 1
    except Exception:
        return False


def _divided_later(tree: ast.AST, stmt: ast.stmt) -> bool:
    """Whether the learner's code scales what ``stmt`` assigns afterwards (``loss = loss / n``,
    ``loss /= n``): then its sum may be a mean written in two steps."""
    targets = {t.id for t in getattr(stmt, "targets", [getattr(stmt, "target", None)]) if isinstance(t, ast.Name)}
    scales = (ast.Div, ast.Mult, ast.FloorDiv)
    for node in ast.walk(tree):
        if isinstance(node, ast.AugAssign) and isinstance(node.op, scales):
            operands: list[ast.expr] = [node.target]
        elif isinstance(node, ast.BinOp) and isinstance(node.op, scales):
            operands = [node.left, node.right]
        else:
            continue
        if any(isinstance(n, ast.Name) and n.id in targets for n in operands):
            return True
    return False


def _may_carry_gradient(method: ast.Attribute, parents: dict) -> bool:
    """Whether a gradient could flow through the reduction ``method`` names: not where it
    reduces a comparison (a count of matches) or its result becomes a number (.item())."""
    if any(isinstance(n, ast.Compare) for n in ast.walk(method.value)):
        return False
    node: ast.AST = method
    while isinstance(parents.get(node), (ast.expr, ast.keyword)):
        node = parents[node]
        if isinstance(node, ast.Attribute) and node.attr in ("item", "tolist"):
            return False
    return True


def _sentence(kind: str, line: int, mine, theirs, parents: dict, ref_parents: dict) -> str:
    where = f"line {line} of your code {EDIT_PHRASE}"
    if kind == "reduction":
        if mine.attr.endswith("sum"):
            why = "a sum over n values is n times their mean"
        else:
            why = "a mean over n values is 1/n of their sum"
        if _may_carry_gradient(mine, parents):
            why += ", and so is every gradient that flows through it"
        return f"{where} in taking .{mine.attr}() where it takes .{theirs.attr}(): {why}"
    if kind == "swap":
        what = _swap(mine, theirs)
        return f"{where} in {_op_text(mine)} where it has {_op_text(theirs)}: the same {what} in the other order"
    # Both sides the same levels up: above the difference the two statements are alike.
    steps = max(_lifts(mine, parents), _lifts(theirs, ref_parents))
    shown, ref_shown = _op_text(_up(mine, parents, steps)), _op_text(_up(theirs, ref_parents, steps))
    if kind == "dim":
        return (
            f"{where} in {shown} where it has {ref_shown}: your code works along dim {_int(mine)}, the reference's "
            f"along dim {_int(theirs)}"
        )
    if kind == "sign":
        return f"{where} in {shown} where it has {ref_shown}: the opposite sign"
    if kind == "operator":
        return f"{where} in {shown} where it has {ref_shown}: the inverse operation"
    if kind == "constant":
        return f"{where} in {shown} where it has {ref_shown}: the constant {_int(mine)} where the reference's is {_int(theirs)}"
    return f"{where} in {shown} where it has {ref_shown}: off by one"


def _bindings(name: str, tree: ast.AST) -> list:
    """Every assignment to ``name`` in ``tree``, as text."""
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign):
            targets = n.targets
        elif isinstance(n, (ast.AnnAssign, ast.AugAssign)):
            targets = [n.target]
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            out.append(ast.unparse(n))
    return out


def _shared_binding(name: str, mine: ast.AST, theirs: ast.AST) -> str | None:
    """The one assignment that binds ``name`` in both sources, written alike and binding it
    nowhere else; None where the two bind it differently (a name of the learner's own may
    hold anything)."""
    ours, refs = _bindings(name, mine), _bindings(name, theirs)
    if len(refs) != 1 or ours != refs or _binds(name, mine) != 1 or _binds(name, theirs) != 1:
        return None
    return refs[0]


def _other_name(a: ast.Name, b: ast.Name, stmt: ast.stmt, mine: ast.AST, theirs: ast.AST, values: dict) -> str | None:
    """``a`` used where the reference uses ``b``, said only where ``a`` means in the learner's
    code what it means in the reference's (the same one assignment in both, or a value of the
    setup's that neither binds) and ``b`` is a value of the reference's too: a name of the
    learner's own may hold what the reference's ``b`` holds, and a module or a function
    another name stands for (``F`` for ``torch.nn.functional``) may be the same one."""
    binding = _shared_binding(a.id, mine, theirs)
    if binding is None and not _setup_value(a.id, mine, theirs, values):
        return None
    if not (_bindings(b.id, theirs) and _binds(b.id, theirs) == len(_bindings(b.id, theirs))) and not _setup_value(
        b.id, mine, theirs, values
    ):
        return None
    yours = f"the reference's too: {binding}" if binding else "the setup's"
    return (
        f"line {getattr(a, 'lineno', stmt.lineno)} of your code {EDIT_PHRASE} "
        f"in using {a.id} where it uses {b.id} (your {a.id} is {yours})"
    )


def _binds(name: str, tree: ast.AST) -> int:
    """How many times ``tree`` binds ``name`` in any way: an assignment, a loop's or a
    with's target, an import, a parameter, a def or a class."""

    def bound(n) -> str | None:
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            return n.id
        if isinstance(n, ast.alias):
            return n.asname or n.name.split(".")[0]
        if isinstance(n, ast.arg):
            return n.arg
        return n.name if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else None

    count = sum(1 for n in ast.walk(tree) if bound(n) == name)
    return count


def _setup_value(name: str, mine: ast.AST, theirs: ast.AST, values: dict) -> bool:
    """A value (a tensor, a number, a list: no module, no function) the setup made and
    neither source binds."""
    if name not in values or _binds(name, mine) or _binds(name, theirs):
        return False
    value = values[name]
    return not callable(value) and not isinstance(value, types.ModuleType)


def _augmented(aug: ast.stmt, plain: ast.stmt) -> bool:
    """``x op= v`` where the other statement is ``x = x op v``: the same value, one of them
    computed into the object ``x`` holds."""
    return (
        isinstance(aug, ast.AugAssign)
        and isinstance(aug.target, (ast.Name, ast.Attribute))  # a subscript's item is written in place either way
        and isinstance(plain, ast.Assign)
        and len(plain.targets) == 1
        and isinstance(plain.value, ast.BinOp)
        and type(plain.value.op) is type(aug.op)
        and ast.unparse(plain.targets[0]) == ast.unparse(aug.target) == ast.unparse(plain.value.left)
        and _same(plain.value.right, aug.value)
    )


IMMUTABLE = (int, float, complex, str, bytes, bool, tuple, frozenset, type(None))


def _seen_outside(target: ast.expr, stmt: ast.stmt, tree: ast.AST, values: dict) -> bool:
    """Whether the object ``target`` names may be held outside the statement (where in
    place and a new object differ): an attribute, a parameter of the function around the
    statement, or a value of the setup's that is not a number, a string or a tuple."""
    if isinstance(target, ast.Attribute):
        # A count kept on an object (self.steps += 1) is a number: in place or not, the same.
        value = getattr(stmt, "value", None)
        value = getattr(value, "right", None) if isinstance(stmt, ast.Assign) else value
        return not (isinstance(value, ast.Constant) and type(value.value) in (int, float))
    if not isinstance(target, ast.Name):
        return False
    around = [
        f
        for f in ast.walk(tree)
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(n is stmt for n in ast.walk(f))
    ]
    if around:  # the innermost function: ast.walk meets the outer ones first
        arguments = around[-1].args
        return target.id in [a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)]
    return target.id in values and not isinstance(values[target.id], IMMUTABLE)


def _in_place(stmt: ast.stmt, ref_stmt: ast.stmt, tree: ast.AST, values: dict) -> str | None:
    """The sentence for a statement that computes in place what the reference's computes
    into a new object, or the reverse; said only where the object may be seen outside the
    statement (a caller's argument, an attribute, the setup's tensor)."""
    node: ast.expr | None = None
    if _augmented(stmt, ref_stmt):
        assert isinstance(stmt, ast.AugAssign)
        node = stmt.target
        target = ast.unparse(node)
        why = (
            f"it writes into what {target} holds (in place, where that is a tensor, an array or a list), where the "
            "reference's makes a new one: whatever else holds it (the caller's argument, a module's parameter) "
            "changes too"
        )
    elif _augmented(ref_stmt, stmt):
        assert isinstance(stmt, ast.Assign)
        node = stmt.targets[0]
        target = ast.unparse(node)
        why = (
            f"it makes a new object where the reference's writes into what {target} holds (in place, where that is "
            "a tensor, an array or a list): whatever else holds it (the caller's argument, a module's parameter) "
            "keeps the old values"
        )
    if node is None or not _seen_outside(node, stmt, tree, values):
        return None
    return (
        f"line {stmt.lineno} of your code {EDIT_PHRASE} in {ast.unparse(stmt)} where it has "
        f"{ast.unparse(ref_stmt)}: {why}"
    )


def _outline(tree: ast.AST, leaving: ast.stmt) -> list:
    """Every statement of ``tree`` in order, ``leaving`` as a placeholder: a simple one whole, a compound
    one's header (a def's name, parameters and decorators, a class's name and bases)."""
    out: list = []
    for stmt in ast.walk(tree):
        if stmt is leaving:
            out.append("<the statement compared>")  # its place counts: a statement moved past it is a difference
            continue
        if not isinstance(stmt, ast.stmt):
            continue
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append(("def", stmt.name, ast.dump(stmt.args), [ast.dump(d) for d in stmt.decorator_list]))
        elif isinstance(stmt, ast.ClassDef):
            out.append(("class", stmt.name, [ast.dump(b) for b in stmt.bases], [ast.dump(k) for k in stmt.keywords]))
        else:
            part = _parts(stmt)
            out.append(ast.dump(part) if part is not None else type(stmt).__name__)
    return out


def _sole(mine_tree: ast.AST, theirs_tree: ast.AST, stmt: ast.stmt, ref_stmt: ast.stmt) -> bool:
    """Whether the two programs are alike but for ``stmt`` in place of ``ref_stmt``: what
    fails in the learner's code, while the reference passes, then comes from that statement."""
    return _outline(mine_tree, stmt) == _outline(theirs_tree, ref_stmt)


def _parents(tree: ast.AST) -> dict:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def one_edit(code: str, solution: str, values: dict | None = None) -> list:
    """At most one (sentence, topic): the learner's first statement (by line) that is a
    statement of the reference's with one reduction swapped, two operands, arguments or
    items in the other order, something off by one, another dim, or another of the
    reference's values in a value's place. ``values``: the learner's namespace (the setup's
    values; a tensor of one element summed is its mean)."""
    return _edits(code, solution, values)[0]


def one_place(code: str, solution: str, values: dict | None = None) -> list:
    """At most one (sentence, topic) where no edit ``one_edit`` names is found and the two
    programs differ in one place only, one part of one statement: the failure comes from
    there, and the sentence shows that part of the learner's code (not the reference's)."""
    named, place = _edits(code, solution, values)
    return [] if named else place


def _edits(code: str, solution: str, values: dict | None) -> tuple[list, list]:
    try:
        mine_tree, theirs_tree = ast.parse(code or ""), ast.parse(solution or "")
    except SyntaxError:
        return [], []
    mine, theirs = _statements(mine_tree), _statements(theirs_tree)
    if len(mine) > MAX_STATEMENTS or len(theirs) > MAX_STATEMENTS:
        return [], []
    parents, ref_parents = _parents(mine_tree), _parents(theirs_tree)
    values = values or {}
    mine_dumps = {ast.dump(p) for _, p in mine}
    theirs_dumps = {ast.dump(p) for _, p in theirs}
    only_place: list = []  # an edit of no kind named here, in the one statement that differs
    for stmt, part in sorted(mine, key=lambda sp: (sp[0].lineno, sp[0].col_offset)):
        if ast.dump(part) in theirs_dumps:
            continue  # written as the reference writes it: no edit
        for ref_stmt, ref_part in theirs:
            if ast.dump(ref_part) in mine_dumps:
                continue  # the reference's statement is in the learner's code as it is: not this one
            in_place = _in_place(stmt, ref_stmt, mine_tree, values)
            if in_place:
                return [(in_place, "edit:in-place")], []
            if type(ref_stmt) is not type(stmt):
                continue
            found: list = []
            _differences(part, ref_part, found)
            if len(found) != 1:
                continue
            a, b = found[0]
            synthetic = a is part and isinstance(stmt, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith))
            if not (isinstance(a, ast.AST) and isinstance(b, ast.AST)) or synthetic:
                continue  # lists of other lengths, a loop's target and iterable crossed: no one edit
            if isinstance(parents.get(a), ast.UnaryOp) and isinstance(ref_parents.get(b), ast.UnaryOp):
                a, b = parents[a], ref_parents[b]  # -2 for -1: the number is the place
            sole = _sole(mine_tree, theirs_tree, stmt, ref_stmt)
            kind = _kind(a, b, parents, sole=sole)
            # Only a part of the statement's value: where the whole value differs, "the one
            # place" would point at everything the statement computes.
            whole = a is part or a is getattr(stmt, "value", None)
            if kind is None and sole and not only_place and not whole:
                line = getattr(a, "lineno", stmt.lineno)
                only_place.append(
                    (
                        f"line {line} of your code {PLACE_PHRASE}, which it matches statement for statement "
                        f"elsewhere: `{_clipped(_op_text(a))}` there is what to look at",
                        "edit:place",
                    )
                )
            if kind is None or (kind == "reduction" and (_divided_later(mine_tree, stmt) or _scalar(a.value, values))):
                continue
            if kind == "swap" and isinstance(a, ast.BinOp) and isinstance(a.op, ast.Sub) and _sign_lost(a, parents):
                continue
            if kind == "swap" and isinstance(a, (ast.Tuple, ast.List)) and _unordered(a, parents):
                continue
            if kind == "sign" and (_negated(a, b) or _negated(b, a)) and _sign_lost(a, parents):
                continue  # (-d) ** 2, abs(-d): the whole value negated, then its sign dropped
            if kind == "name":
                said = _other_name(a, b, stmt, mine_tree, theirs_tree, values)
                if said:
                    return [(said, "edit:name")], []
                continue
            line = getattr(a, "lineno", stmt.lineno)
            return [(_sentence(kind, line, a, b, parents, ref_parents), f"edit:{kind}")], []
    return [], only_place


# ---------------------------------------------------------------- a statement missing

IGNORED_CALLS = frozenset({"print"})  # what a learner adds to look, not to compute


def _header(stmt: ast.stmt) -> str | None:
    """A compound statement's first line, as its key; None for a simple statement."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return f"def {stmt.name}({ast.unparse(stmt.args)})"
    if isinstance(stmt, ast.ClassDef):
        return f"class {stmt.name}"
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return f"for {ast.unparse(stmt.target)} in {ast.unparse(stmt.iter)}"
    if isinstance(stmt, ast.While):
        return f"while {ast.unparse(stmt.test)}"
    if isinstance(stmt, ast.If):
        return f"if {ast.unparse(stmt.test)}"
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return "with " + ", ".join(ast.unparse(i) for i in stmt.items)
    if isinstance(stmt, ast.Try):
        return "try"
    if isinstance(stmt, ast.Match):
        return f"match {ast.unparse(stmt.subject)}"
    return None


def _ignored(stmt: ast.stmt) -> bool:
    if isinstance(stmt, (ast.Pass, ast.Assert)):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
        return True  # a docstring or a bare string
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    return isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in IGNORED_CALLS


def _flat(body: list, depth: int, out: list, owner: str | None) -> None:
    """(depth, text, statement, enclosing function) for every statement in source order."""
    for stmt in body:
        if _ignored(stmt):
            continue
        header = _header(stmt)
        if header is None:
            out.append((depth, ast.unparse(stmt), stmt, owner))
            continue
        out.append((depth, header, stmt, owner))
        inner = stmt.name if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) else owner
        for field in ("body", "orelse", "finalbody"):
            block = getattr(stmt, field, None) or []
            if field != "body" and block:
                out.append((depth, field, None, owner))
            _flat(block, depth + 1, out, inner)
        for handler in getattr(stmt, "handlers", []):
            out.append((depth, f"except {ast.unparse(handler.type) if handler.type else ''}", None, owner))
            _flat(handler.body, depth + 1, out, inner)
        for case in getattr(stmt, "cases", []):
            out.append((depth + 1, f"case {ast.unparse(case.pattern)}", None, owner))
            _flat(case.body, depth + 2, out, inner)


def one_missing(code: str, solution: str) -> list:
    """At most one (sentence, topic): where the learner's code is the reference's, statement
    for statement and in order, but for one simple statement of the reference's that it
    lacks (left out or written as ``pass``). Prints, asserts and docstrings are not
    compared. Then that statement is the one difference, and the reference with it passes."""
    lone = _lone_statement(code, solution, "insert")
    if lone is None:
        return []
    i1, mine, (text, _, owner) = lone
    mine_tree = ast.parse(code or "")
    where = f" in {owner}()" if owner else ""
    before = next((m[2] for m in reversed(mine[:i1]) if m[2] is not None), None)
    after = next((m[2] for m in mine[i1:] if m[2] is not None), None)
    start = 0 if before is None else (before.lineno if _header(before) else before.end_lineno or before.lineno)
    end = after.lineno if after is not None else 10**9
    # A pass in its place (a slot the learner left empty): that line is where it goes.
    slot = [n.lineno for n in ast.walk(mine_tree) if isinstance(n, ast.Pass) and start < n.lineno < end]
    if slot:
        where += f", at line {slot[0]} of your code (where it has pass)"
    elif before is not None:
        where += f", after line {start} of your code"
    elif after is not None:
        where += f", before line {after.lineno} of your code"
    return [
        (
            f"your code {MISSING_PHRASE}{where}: {text} "
            "(the reference runs it there; your code has nothing in its place)",
            "edit:missing",
        )
    ]


INVERSE = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult}


def _binary_ops(tree: ast.AST) -> dict:
    """{(left, right) as dumped: {operator type: the first such BinOp}} for + - * / with at
    least one operand that is not a constant."""
    out: dict = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and type(node.op) in INVERSE:
            if isinstance(node.left, ast.Constant) and isinstance(node.right, ast.Constant):
                continue
            out.setdefault((ast.dump(node.left), ast.dump(node.right)), {}).setdefault(type(node.op), node)
    return out


def one_inverse(code: str, solution: str) -> list:
    """At most one (sentence, topic): an operation of the learner's whose two operands the
    reference's code combines with the inverse operation (``args[0] / s`` where it has
    ``args[0] * s``; ``a + b`` where it has ``a - b``), where neither source also combines
    them the other's way. Wherever the statements around it differ, the two operations are
    the same operands taken the other way, and that is said."""
    try:
        mine, theirs = _binary_ops(ast.parse(code or "")), _binary_ops(ast.parse(solution or ""))
    except SyntaxError:
        return []
    found = []
    for key, ops in mine.items():
        for op, node in ops.items():
            inverse = INVERSE[op]
            if inverse in (theirs.get(key) or {}) and op not in theirs[key] and inverse not in ops:
                found.append((node, theirs[key][inverse]))
    if len(found) != 1:
        return []
    node, ref = found[0]
    kind = "the opposite sign" if isinstance(node.op, (ast.Add, ast.Sub)) else "the inverse operation"
    return [
        (
            f"line {node.lineno} of your code has {_clipped(_op_text(node))} where the reference's code has "
            f"{_clipped(_op_text(ref))}: the same two operands, {kind}",
            "edit:inverse",
        )
    ]


def one_extra(code: str, solution: str) -> list:
    """At most one (sentence, topic): where the learner's code is the reference's, statement
    for statement and in order, but for one simple statement the reference does not have."""
    lone = _lone_statement(code, solution, "delete")
    if lone is None:
        return []
    _, _, (text, stmt, owner) = lone
    where = f" in {owner}()" if owner else ""
    return [
        (
            f"your code {EXTRA_PHRASE}{where}, line {stmt.lineno}: {text} (the reference has nothing there)",
            "edit:extra",
        )
    ]


def _lone_statement(code: str, solution: str, tag: str):
    """(where in the learner's statements, the learner's flattened statements, (text, statement,
    owner)) where the one difference between the two sources is one simple statement the
    reference has and the code lacks (``tag`` "insert") or the code has and the reference lacks
    ("delete"); None otherwise (a block's header or a whole block is not one statement)."""
    diff = _one_difference(code, solution)
    if diff is None:
        return None
    (found, i1, i2, j1, j2), mine, theirs = diff
    if found != tag or (i2 - i1 if tag == "delete" else j2 - j1) != 1:
        return None
    _, text, stmt, owner = mine[i1] if tag == "delete" else theirs[j1]
    if stmt is None or _header(stmt) is not None:
        return None
    return i1, mine, (text, stmt, owner)


def _one_difference(code: str, solution: str):
    """((tag, i1, i2, j1, j2), mine, theirs) where the two flattened sources differ in one
    run of statements only (difflib's opcode), else None."""
    import difflib

    flat = _simple_statements(code, solution)
    if flat is None:
        return None
    mine, theirs = flat
    keys = [(d, t) for d, t, _, _ in mine]
    ref_keys = [(d, t) for d, t, _, _ in theirs]
    opcodes = [
        op for op in difflib.SequenceMatcher(None, keys, ref_keys, autojunk=False).get_opcodes() if op[0] != "equal"
    ]
    return (opcodes[0], mine, theirs) if len(opcodes) == 1 else None


def _simple_statements(code: str, solution: str):
    """Both sources flattened (``_flat``), or None where either does not parse or is too long."""
    try:
        mine_tree, theirs_tree = ast.parse(code or ""), ast.parse(solution or "")
    except SyntaxError:
        return None
    mine: list = []
    theirs: list = []
    _flat(mine_tree.body, 0, mine, None)
    _flat(theirs_tree.body, 0, theirs, None)
    if not mine or len(mine) > MAX_STATEMENTS or len(theirs) > MAX_STATEMENTS:
        return None
    return mine, theirs


def _quoted(text: str) -> str:
    return f"`{text if len(text) <= 80 else text[:77] + '...'}`"


def _header_nodes(stmt: ast.stmt) -> list:
    """The parts of a statement that ``_flat`` keys it by: all of a simple one, a compound
    one's header."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [stmt.args]
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return [stmt.target, stmt.iter]
    if isinstance(stmt, (ast.While, ast.If)):
        return [stmt.test]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return list(stmt.items)
    if isinstance(stmt, ast.Match):
        return [stmt.subject]
    if isinstance(stmt, (ast.ClassDef, ast.Try)):
        return []
    return [stmt]


def _names_of(stmt: ast.stmt | None) -> list:
    """The identifiers of a statement's keyed parts, in a fixed order."""
    if stmt is None:
        return []
    names = [stmt.name] if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else []
    for part in _header_nodes(stmt):
        for node in ast.walk(part):
            if isinstance(node, ast.Name):
                names.append(node.id)
            elif isinstance(node, ast.arg):
                names.append(node.arg)
    return names


def _shape(entry: tuple) -> tuple:
    """A flattened statement's key with every identifier blanked: the same statement written
    with other names has the same shape."""
    depth, text, stmt, owner = entry
    if stmt is None:
        return depth, text, owner is not None
    import copy

    blank = copy.deepcopy(stmt)
    for node in ast.walk(blank):
        if isinstance(node, ast.Name):
            node.id = "_"
        elif isinstance(node, ast.arg):
            node.arg = "_"
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            node.name = "_"
    return depth, _header(blank) or ast.unparse(blank), owner is not None


def _bound(tree: ast.AST) -> set:
    """The names a program binds itself (assigned, defined, parameters, imported)."""
    out: set = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.add(node.id)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.alias):
            out.add((node.asname or node.name).split(".")[0])
    return out


def _renamed_alike(pairs: list, mine_bound: set, ref_bound: set) -> bool:
    """Whether the aligned statements (learner's, reference's) differ at most by a consistent
    renaming of names each program binds itself (a handle called h, a hook of another name)."""
    there: dict = {}
    back: dict = {}
    for mine, ref in pairs:
        for a, b in zip(_names_of(mine), _names_of(ref), strict=False):
            if a != b and (a not in mine_bound or b not in ref_bound):
                return False  # a name the setup gave (model, x) stands for another
            if there.setdefault(a, b) != b or back.setdefault(b, a) != a:
                return False
    return True


def _place(flat: list, k: int, words: list) -> str:
    """Where the k-th flattened statement stands: in which block, and after what (each
    entry said with ``words[index]``, the learner's text of that statement)."""
    depth = flat[k][0]
    enclosing = next((m for m in range(k - 1, -1, -1) if flat[m][0] < depth), None)
    owner = flat[k][3]
    if enclosing is not None:
        inside = f"inside {_quoted(words[enclosing])}"
    else:
        inside = f"in the body of {owner}()" if owner else "outside any block"
    prev = next((m for m in range(k - 1, -1, -1) if flat[m][0] <= depth), None)
    if prev is None or flat[prev][0] < depth:
        return f"{inside}, first"
    if flat[prev][2] is not None and _header(flat[prev][2]) is not None:
        return f"{inside}, after the {_quoted(words[prev])} block"
    return f"{inside}, after {_quoted(words[prev])}"


def _moved_across(keys: list, ref_keys: list, mine: list, theirs: list, first: int, last: int):
    """(learner's index, reference's index, partner) for one simple statement that stands in
    another block of the same function (``opt.zero_grad()`` inside the loop), the rest
    alike; else None."""
    tries = 0
    for i in range(first, last + 1):
        if mine[i][2] is None or _header(mine[i][2]) is not None:
            continue
        for j in range(first, last + 1):
            if keys[i][1:] != ref_keys[j][1:] or theirs[j][2] is None or mine[i][3] != theirs[j][3]:
                continue
            tries += 1
            if tries > MAX_MOVES_TRIED:  # many alike statements: each try compares both programs
                return None
            if keys[:i] + keys[i + 1 :] == ref_keys[:j] + ref_keys[j + 1 :]:
                rest = [r for r in range(len(ref_keys)) if r != j]
                partner = [j if k == i else rest[k if k < i else k - 1] for k in range(len(keys))]
                return i, j, partner
    return None


def one_moved(code: str, solution: str) -> list:
    """At most one (sentence, topic): where the learner's code is the reference's, statement
    for statement (its own names aside, where it renames consistently what it binds), but
    for one simple statement that stands elsewhere (``handle.remove()`` before the call it
    should outlive, a snapshot taken after the step, ``opt.zero_grad()`` inside the loop).
    Then the order is the one difference, and the reference's order passes. Two neighbours
    of one block exchanged are said as such: which of the two moved is not known."""
    flat = _simple_statements(code, solution)
    if flat is None:
        return []
    mine, theirs = flat
    keys = [_shape(entry) for entry in mine]
    ref_keys = [_shape(entry) for entry in theirs]
    if len(keys) != len(ref_keys) or keys == ref_keys:
        return []
    differ = [i for i, (a, b) in enumerate(zip(keys, ref_keys, strict=True)) if a != b]
    first, last = differ[0], differ[-1]
    # One statement moved within its block: the differing stretch is the reference's
    # rotated by one place. ``partner[i]``: the reference's statement the learner's i-th is.
    partner = list(range(len(keys)))
    ref_at: int | None = None
    if keys[first : last + 1] == [*ref_keys[first + 1 : last + 1], ref_keys[first]]:
        at, ref_at = last, first  # moved later
        partner[first:last] = range(first + 1, last + 1)
        partner[last] = first
    elif keys[first : last + 1] == [ref_keys[last], *ref_keys[first:last]]:
        at, ref_at = first, last  # moved earlier
        partner[first + 1 : last + 1] = range(first, last)
        partner[first] = last
    span = range(first, last + 1)
    in_block = (
        ref_at is not None
        and not any(mine[i][2] is None or _header(mine[i][2]) is not None for i in span)
        and len({(mine[i][0], mine[i][3]) for i in span}) == 1
    )
    if not in_block:
        across = _moved_across(keys, ref_keys, mine, theirs, first, last)
        if across is None:
            return []
        at, ref_at, partner = across
    pairs = [(mine[i][2], theirs[partner[i]][2]) for i in range(len(mine))]
    if not _renamed_alike(pairs, _bound(ast.parse(code)), _bound(ast.parse(solution))):
        return []
    owner = mine[at][3]
    where = f" in {owner}()" if owner else ""
    stmt, text = mine[at][2], mine[at][1]
    if in_block and last - first == 1:
        a, b = mine[first], mine[last]
        return [
            (
                f"your code {MOVED_PHRASE}{where}: it runs {_quoted(a[1])} (line {a[2].lineno}) before "
                f"{_quoted(b[1])} (line {b[2].lineno}), and the reference runs them the other way round",
                "edit:moved",
            )
        ]
    if in_block:
        # The reference's neighbour of the moved statement, in the learner's words.
        if at == last:
            mine_place, ref_place = f"after {_quoted(mine[at - 1][1])}", f"before {_quoted(mine[first][1])}"
        else:
            mine_place, ref_place = f"before {_quoted(mine[at + 1][1])}", f"after {_quoted(mine[last][1])}"
    else:
        words = [entry[1] for entry in mine]
        ref_words = [""] * len(theirs)
        for i, r in enumerate(partner):
            ref_words[r] = words[i]
        assert ref_at is not None  # set by _moved_across
        mine_place, ref_place = _place(mine, at, words), _place(theirs, ref_at, ref_words)
    return [
        (
            f"your code {MOVED_PHRASE}{where}: it runs {_quoted(text)} at line {stmt.lineno}, {mine_place}, "
            f"where the reference runs it {ref_place}",
            "edit:moved",
        )
    ]
