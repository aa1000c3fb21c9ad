"""An in-place update the reference writes (``scores.zero_()``, ``layer.bias.copy_(b)``,
``nn.init.uniform_(layer.weight, ...)``) that no line of the learner's code can have made.

Read from the two sources alone. Said only where the learner's source holds nothing that
could write the same tensor some other way: no in-place call on it or on anything that may
be it (a bare name, an attribute of the same name, an item), no assignment to it or into
it, no optimizer step, ``load_state_dict``, ``apply``, ``.data`` or ``out=``, and no call
that is handed the object it belongs to (a helper that may change it). A failing check must
read the tensor's object, or call the function the reference's update sits in.
"""

import ast
import re

import torch

INIT_MODULES = frozenset({"nn.init", "torch.nn.init", "init"})
# Calls that change tensors without an in-place method of their own on the page
WRITERS = frozenset(
    {"step", "load_state_dict", "apply", "reset_parameters", "setattr", "exec", "eval", "fit"}
    | {"__setitem__", "index_put", "scatter", "update", "copyto", "put", "place", "vector_to_parameters"}
)
MAKERS = frozenset({"register_buffer", "register_parameter"})
CONTAINERS = ("list", "set", "dict", "tuple", "deque", "defaultdict", "OrderedDict")
# In-place methods that set a flag, not values (tracediff.never_freezes speaks of requires_grad_)
FLAGS = frozenset({"requires_grad_", "share_memory_", "retain_grad"})
TORCH_WRITERS = frozenset({"step", "load_state_dict", "apply", "reset_parameters", "update", "index_put", "scatter"})
# Functions that only read what they are handed
READERS = frozenset(
    {"print", "len", "float", "int", "bool", "str", "repr", "list", "tuple", "dict", "sorted", "round", "abs", "sum"}
    | {"min", "max", "isinstance", "type", "id", "enumerate", "zip", "range", "iter", "next", "all", "any", "hasattr"}
)
# Library functions: what one changes in place has a trailing underscore (seen as a write)
LIBRARIES = ("torch.", "np.", "numpy.", "F.", "nn.", "math.")
LIBRARY_ROOTS = frozenset({"torch", "np", "numpy", "F", "nn", "init", "math"})
PLAIN = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


def _in_place(call: ast.Call) -> bool:
    f = call.func
    name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
    return name.endswith("_") and not name.endswith("__")


def _updated(call: ast.Call) -> str | None:
    """What the reference's ``call`` changes in place: X of ``X.name_(...)`` or of
    ``nn.init.name_(X, ...)``."""
    if not _in_place(call) or not isinstance(call.func, ast.Attribute):
        return None
    owner = ast.unparse(call.func.value)
    if owner in INIT_MODULES:
        return ast.unparse(call.args[0]) if call.args else None
    return owner


def _written(call: ast.Call) -> list:
    """What the learner's ``call`` may change in place: its owner and its first argument
    (``uniform_(w)`` imported bare, ``torch.Tensor.add_(w, 1)``)."""
    if not _in_place(call):
        return []
    first = [ast.unparse(a) for a in call.args[:1]]
    if not isinstance(call.func, ast.Attribute):
        return first  # a function imported bare: it changes what it is handed
    owner = ast.unparse(call.func.value)
    if owner in INIT_MODULES or _root(owner) in LIBRARY_ROOTS or owner.rpartition(".")[2][:1].isupper():
        return [owner, *first]  # nn.init.zeros_(w), torch.relu_(w), torch.Tensor.add_(w, 1)
    return [owner]  # w.copy_(src) changes w, not src


def _root(expr: str) -> str:
    return re.split(r"[.\[(]", expr, maxsplit=1)[0]


def _last(expr: str) -> str:
    return expr.rpartition(".")[2]


def _names(node) -> set:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} if node is not None else set()


# Calls whose result may share memory with (or hold parts of) what they are called on
PARTS = frozenset(
    {"parameters", "named_parameters", "modules", "named_modules", "children", "named_children", "buffers"}
    | {"named_buffers", "state_dict", "values", "items", "get", "view", "view_as", "reshape", "detach", "t"}
    | {"transpose", "permute", "squeeze", "unsqueeze", "flatten", "expand", "narrow", "select", "unbind", "split"}
    | {"chunk", "numpy", "as_strided", "diagonal", "iter", "list", "tuple", "enumerate", "zip", "reversed"}
)
# Attributes that are facts about a tensor, not a part of it
FACTS = frozenset({"shape", "dtype", "device", "ndim", "requires_grad", "is_leaf", "grad_fn", "size", "numel"})


def _parts(node) -> set:
    """The names whose object the value of ``node`` may be, or share memory with."""
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.Attribute):
        return set() if node.attr in FACTS else _parts(node.value)
    if isinstance(node, ast.Subscript | ast.Starred):
        return _parts(node.value)
    if isinstance(node, ast.Tuple | ast.List):
        return set().union(*(_parts(e) for e in node.elts)) if node.elts else set()
    if isinstance(node, ast.Call):
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr in PARTS:
            return _parts(f.value)
        if isinstance(f, ast.Name) and f.id in PARTS:
            return set().union(*(_parts(a) for a in node.args)) if node.args else set()
    if isinstance(node, ast.IfExp):
        return _parts(node.body) | _parts(node.orelse)
    return set()


def _aliases(tree: ast.AST, root: str) -> set:
    """Names that may hold the object ``root`` names or a part of it: ``root`` itself, every
    function parameter (bound elsewhere), names bound from an expression that may be a part
    of one of these (``w = layer.weight``, ``for p in model.parameters()``) and the names one
    of these is bound from (``layer = other``), to a fixpoint."""
    found = {root} | {a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)}
    bindings = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.NamedExpr):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bindings.append((set().union(*(_names(t) for t in targets)), _parts(node.value)))
        elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            bindings.append((_names(node.target), _parts(node.iter)))
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            bindings.append((_names(node.optional_vars), _parts(node.context_expr)))
    grew = True
    while grew:
        grew = False
        for bound, read in bindings:
            # both ways: w = layer.weight (w is a part), layer = other (other's parts are its)
            if (read & found and not bound <= found) or (bound & found and not read <= found):
                found |= bound | read
                grew = True
    return found


def _may_be(written: str, target: str, aliases: set) -> bool:
    """Whether a write to ``written`` (an expression) may land on ``target``'s tensor."""
    if not PLAIN.fullmatch(written):  # an item, a call's result: whatever it reads
        return bool(set(re.findall(r"[A-Za-z_]\w*", written)) & aliases)
    return (
        written == target
        or written.startswith(target + ".")
        or (written in aliases)  # a name that may hold it
        or ("." in written and _last(written) == _last(target))  # another way to the same attribute
        or ("." in written and _root(written) in aliases and _root(written) != _root(target))
    )


def _targets(node) -> list:
    if isinstance(node, ast.Tuple | ast.List):
        return [t for item in node.elts for t in _targets(item)]
    if isinstance(node, ast.Starred):
        return _targets(node.value)
    return [node]


def _may_write(tree: ast.AST, target: str, made: bool = True) -> bool:
    """``made``: whether the reference's code makes the object (else the setup did, and
    binding its name again is a change)."""
    root = _root(target)
    aliases = _aliases(tree, root)
    own = _defined(tree)  # the learner's own functions: their bodies are read here too
    making = {id(n) for f in ast.walk(tree) if _is_init(f) for n in ast.walk(f)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in own and (isinstance(node.func, ast.Name) or name not in TORCH_WRITERS):
                continue  # the learner's own function or method (opt.step() stays torch's)
            written = _written(node)
            if any(_may_be(w, target, aliases) for w in written):
                return True
            if written:
                continue  # an in-place call changes what _written names, not what it is handed
            if name in MAKERS and id(node) in making:
                continue  # a buffer or parameter registered in __init__ is how it is made
            if name in WRITERS | MAKERS or any(k.arg == "out" for k in node.keywords):
                return True
            handed = any(_names(a) & aliases for a in [*node.args, *(k.value for k in node.keywords)])
            if handed and name not in READERS and not ast.unparse(node.func).startswith(LIBRARIES):
                return True  # a helper handed the object (or a part of it) may change it
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in (t for group in targets for t in _targets(group)):
                if isinstance(t, ast.Name):
                    # binding a name makes (or names) an object and writes no tensor, except += and
                    # the like on one that may hold it
                    if (isinstance(node, ast.AugAssign) and t.id in aliases) or (t.id == root and not made):
                        return True
                elif _may_be(ast.unparse(t), target, aliases):
                    return True
                elif isinstance(t, ast.Subscript) and _may_be(ast.unparse(t.value), target, aliases):
                    return True  # x[...] = v writes into x (obj.attr = v binds an attribute: checked above)
        elif (isinstance(node, ast.Attribute) and node.attr == "data") or isinstance(node, ast.Global | ast.Nonlocal):
            return True
    return False


def _updates(tree: ast.AST) -> list:
    """(tensor, statement, function or None) for each statement of ``tree`` that is an in-place
    update of a plainly named tensor (its value unused: called for the change it makes)."""
    found = []

    def visit(body, function):
        for stmt in body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                visit(stmt.body, stmt.name)
                continue
            if isinstance(stmt, ast.ClassDef):
                visit(stmt.body, function)
                continue
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                target = _updated(stmt.value)
                flag = isinstance(stmt.value.func, ast.Attribute) and stmt.value.func.attr in FLAGS
                if target is not None and PLAIN.fullmatch(target) and not flag:
                    found.append((target, ast.unparse(stmt.value), function))
            for field in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list):
                    visit([s for s in inner if isinstance(s, ast.stmt | ast.excepthandler)], function)

    visit(getattr(tree, "body", []), None)
    return found


def dropped_results(tree: ast.AST, theirs: ast.AST) -> list:
    """``x.add(1)`` as a statement where the reference's is ``x.add_(1)``: an out-of-place
    method whose result the code throws away (methods torch.Tensor has, so the call ran)."""
    wanted = {
        (ast.unparse(n.value.func.value), n.value.func.attr[:-1]): ast.unparse(n.value)
        for n in ast.walk(theirs)
        if isinstance(n, ast.Expr)
        and isinstance(n.value, ast.Call)
        and isinstance(n.value.func, ast.Attribute)
        and _in_place(n.value)
    }
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call) and isinstance(n.value.func, ast.Attribute):
            owner, method = ast.unparse(n.value.func.value), n.value.func.attr
            if (owner, method) in wanted and callable(getattr(torch.Tensor, method, None)):
                out.append(
                    f"your code calls {ast.unparse(n.value)} and drops what it returns: {method}() is out of place "
                    f"(it makes a new tensor and leaves {owner} as it was), where the reference's "
                    f"{wanted[owner, method]} changes {owner} itself"
                )
    return out[:1]


OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.MatMult: "@", ast.Pow: "**"}


def _rebinds(node) -> tuple | None:
    """(name, op) of ``x = x OP ...``."""
    if (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.BinOp)
        and isinstance(node.value.left, ast.Name)
        and node.value.left.id == node.targets[0].id
        and type(node.value.op) in OPS
    ):
        return node.targets[0].id, type(node.value.op)
    return None


def _augments(node) -> tuple | None:
    """(name, op) of ``x OP= ...``."""
    if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and type(node.op) in OPS:
        return node.target.id, type(node.op)
    return None


def _parameters(tree: ast.AST) -> dict:
    """Each function parameter's name -> the function's name, for parameters the function
    never binds to something else (``p = p.clone()`` first: then ``p *= a`` is its own)."""
    out = {}
    for f in ast.walk(tree):
        if not isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        augmented = {id(n.target) for n in ast.walk(f) if isinstance(n, ast.AugAssign)}
        bound = {
            n.id
            for n in ast.walk(f)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and id(n) not in augmented
        }
        for a in [*f.args.posonlyargs, *f.args.args, *f.args.kwonlyargs]:
            if a.arg not in bound:
                out[a.arg] = f.name
    return out


def _containers(tree: ast.AST) -> set:
    """Names the source binds to a list, set, dict or tuple (``seen = set()``): never tensors there."""

    def container(value) -> bool:
        literal = isinstance(value, ast.List | ast.Set | ast.Dict | ast.ListComp | ast.SetComp | ast.DictComp)
        made = isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in CONTAINERS
        return literal or made

    out = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign):
            continue
        for t in node.targets:
            if isinstance(t, ast.Name) and (container(node.value) or isinstance(node.value, ast.Tuple)):
                out.add(t.id)
            elif isinstance(t, ast.Tuple) and isinstance(node.value, ast.Tuple) and len(t.elts) == len(node.value.elts):
                # order, seen = [], set()
                out |= {
                    n.id
                    for n, v in zip(t.elts, node.value.elts, strict=True)
                    if isinstance(n, ast.Name) and container(v)
                }
    return out


def _is_tensor(name: str, values: dict) -> bool | None:
    """Whether the learner's top-level ``name`` is a tensor; None for a name the namespace
    does not hold (a function's local or parameter: the source does not say)."""
    if name not in values:
        return None
    return isinstance(values[name], torch.Tensor)


def in_place_swaps(tree: ast.AST, theirs: ast.AST, values: dict | None = None) -> list:
    """A statement written in place where the reference's is out of place, or the other way:
    ``w = w - lr * g`` for ``w -= lr * g`` (a new tensor, so the caller's and the optimizer's
    ``w`` never changes), ``p *= a`` for ``p = p * a`` on a parameter of the function (the
    caller's tensor changes), ``a.t_()`` for ``a.t()`` (``a`` itself changes)."""
    out = []
    rebound = {r: n for n in ast.walk(theirs) if (r := _rebinds(n))}
    augmented = {a: n for n in ast.walk(theirs) if (a := _augments(n))}
    mine_aug = {a for n in ast.walk(tree) if (a := _augments(n))}
    mine_re = {r for n in ast.walk(tree) if (r := _rebinds(n))}
    params = _parameters(tree)
    values = values or {}
    for n in ast.walk(tree):
        r, a = _rebinds(n), _augments(n)
        if r and r in augmented and r not in mine_aug and _is_tensor(r[0], values) is not False:
            # += on a number rebinds it too: the sentence holds for tensors only
            which = "" if _is_tensor(r[0], values) else f" (where {r[0]} holds a tensor)"
            out.append(
                f"your code's {ast.unparse(n)} makes a new tensor and binds {r[0]} to it{which}; the reference's "
                f"{ast.unparse(augmented[r])} changes {r[0]} itself in place, so every other holder of that tensor "
                f"(the caller, an optimizer, the checks) sees the change"
            )
        elif a and a in rebound and a not in mine_re and a[0] in params:
            out.append(
                f"your code's {ast.unparse(n)} changes {a[0]} in place where {a[0]} is a tensor, and {a[0]} is what "
                f"the caller passed to {params[a[0]]}(), so the caller's tensor changes too; the reference's "
                f"{ast.unparse(rebound[a])} makes a new tensor and leaves the argument as it was"
            )
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and _in_place(n):
            owner, method = ast.unparse(n.func.value), n.func.attr
            holds = _is_tensor(owner, values)
            if holds is False or owner in _containers(tree) or method in FLAGS:
                continue  # a set's add_ raises (its error says so); requires_grad_ changes no values
            if any(
                isinstance(m, ast.Call)
                and isinstance(m.func, ast.Attribute)
                and m.func.attr == method[:-1]
                and ast.unparse(m.func.value) == owner
                for m in ast.walk(theirs)
            ) and not any(
                isinstance(m, ast.Call) and isinstance(m.func, ast.Attribute) and m.func.attr == method
                for m in ast.walk(theirs)
            ):
                which = "" if holds else f" where {owner} is a tensor"
                out.append(
                    f"your code calls {ast.unparse(n)}, which changes {owner} itself in place{which}; the reference's "
                    f"{owner}.{method[:-1]}(...) returns a new tensor (or a view) and leaves {owner} as it was"
                )
    return out[:1]


def never_updated(code: str, solution: str, failing: list, values: dict | None = None, skip=()) -> list:
    """Sentences for the reference's in-place updates the learner's code cannot have made,
    where a failing check (``failing``: their expressions) reads the tensor's object or calls
    the function the update is in; ``values``: the learner's namespace (the setup's names);
    ``skip``: names already said to be exactly what the setup made."""
    try:
        mine, theirs = ast.parse(code or ""), ast.parse(solution or "")
    except SyntaxError:
        return []
    whole, attributes = _reads(failing)
    values = values if values is not None else {}
    out = dropped_results(mine, theirs) or in_place_swaps(mine, theirs, values)
    for target, statement, function in _updates(theirs):
        if out:
            break
        parts = {_last(target)} if "." in target else set()
        if not ({_root(target), function} & whole or (parts | {function}) & attributes) or _root(target) in skip:
            continue  # no failing check reads it, an attribute of that name, or calls the function it is in
        if function is not None and function not in _defined(mine):
            continue  # the learner's function of that name is missing: its error says so
        if function is None and _root(target) not in _bound(mine) | set(values):
            continue
        if _may_write(mine, target, made=_root(target) in _bound(theirs)):
            continue
        where = f"the reference's {function}()" if function else "the reference"
        out.append(
            f"{where} changes {target} in place with {statement}; no line of your code changes {target} "
            f"(no in-place call on it, no assignment to it or into it), so it keeps the values it was made with"
        )
    return out[:1]


def _reads(failing: list) -> tuple[set, set]:
    """The names the failing checks' expressions read whole (``layer(x)``, ``helper(layer)``,
    ``signal.sum()``) and the attribute names they read (``layer.bias``: bias)."""
    whole, attributes = set(), set()
    for expr in failing:
        tree = _parsed(expr)
        methods = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}  # signal.sum() reads all of it
        under = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute) and id(n) not in methods}
        for n in ast.walk(tree):
            if isinstance(n, ast.Name) and id(n) not in under:
                whole.add(n.id)
            elif isinstance(n, ast.Attribute):
                attributes.add(n.attr)
    return whole, attributes


def _is_init(node) -> bool:
    return isinstance(node, ast.FunctionDef) and node.name == "__init__"


def _parsed(expr: str) -> ast.AST:
    try:
        return ast.parse(expr, mode="eval")
    except SyntaxError:
        return ast.Module(body=[], type_ignores=[])


def _defined(tree: ast.AST) -> set:
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


def _bound(tree: ast.AST) -> set:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return names
