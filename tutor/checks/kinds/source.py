"""source checks: rules on the learner's source, read with ``ast`` (nothing runs).

``forbid``/``require`` entries: a dotted name (``torch.stack``, ``np``), an attribute or
method written ``.item``, a write into an element of a name written ``a[]=`` (``a[1, 0] = 9``,
``a[0] += 1``, and as well a write into a view made from it in the same expression:
``a.t()[0, 1] = 9``, ``a[1][0] = 9``, ``a.view(-1)[3] = 9``, ``a[1, 0].fill_(9)``, or into a name
bound to a view of it, ``u = a.T`` then ``u[0, 1] = 9``, unless the name is one of the check's
``through``: the views the exercise means to be written through), a construct (``for``, ``while``, ``lambda``, ``import``,
``comprehension``), or a quoted literal (``'cuda'``, ``3.14``). A name reached by text is the name
(``getattr(w, "grad")`` uses ``.grad``), and text computed at run time (``getattr(w, "gr" +
"ad")``, ``eval``, ``vars``) breaks every rule on names, which cannot see what it reaches.
``applies_to: learner`` exempts the reference solution, so a loop reference can live beside one-line rules: ``pack
test`` leaves such checks out when it proves the reference. Here every code is a learner's,
even code written exactly like the reference (a learner can paste it from the solution view).
"""

import ast
import io
import tokenize

from ..context import AuthoringError, Context, Outcome
from ..describe import join_names, plural
from ..dotted import dotted_name

CONSTRUCTS = {
    "for": (ast.For, ast.AsyncFor),
    "while": (ast.While,),
    "lambda": (ast.Lambda,),
    "import": (ast.Import, ast.ImportFrom),
    "comprehension": (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp),
    "if": (ast.If, ast.IfExp),
    "class": (ast.ClassDef,),
    "def": (ast.FunctionDef, ast.AsyncFunctionDef),
    "global": (ast.Global,),
}


# What makes a view of the tensor it is read from: a write into one writes into that tensor.
VIEW_ATTRIBUTES = {"T", "mT", "H", "mH", "data", "real", "imag"}
VIEW_METHODS = {
    "t", "transpose", "permute", "view", "view_as", "reshape", "reshape_as", "expand", "expand_as",
    "narrow", "select", "unsqueeze", "squeeze", "flatten", "unflatten", "diagonal", "as_strided",
    "detach", "unfold", "swapaxes", "swapdims", "movedim", "moveaxis", "split", "chunk", "unbind",
    "tensor_split", "view_as_real", "numpy", "__getitem__",
}  # fmt: skip
NOT_WRITES = {"requires_grad_", "share_memory_", "retain_grad"}  # in-place, but not into the elements
# The dunder forms of item assignment and augmented assignment, called by name
# (``a.__setitem__(i, v)``, ``type(a).__iadd__(a, b)``): writes into the elements as well.
DUNDER_WRITES = {"__setitem__", "__delitem__"} | {
    f"__i{op}__"
    for op in (
        "add",
        "sub",
        "mul",
        "matmul",
        "truediv",
        "floordiv",
        "mod",
        "pow",
        "and",
        "or",
        "xor",
        "lshift",
        "rshift",
    )
}
# operator's functions of the same: ``operator.setitem(a, i, v)`` writes into a.
OPERATOR_WRITES = {name.strip("_") for name in DUNDER_WRITES}


def _view_root(node) -> str | None:
    """The name a view expression is made from (``a`` of ``a.t()[0]``), through views only."""
    while True:
        if isinstance(node, ast.Subscript) or (isinstance(node, ast.Attribute) and node.attr in VIEW_ATTRIBUTES):
            node = node.value
        elif isinstance(node, ast.Call) and _torch_view_function(node):
            node = node.args[0]  # torch.as_strided(a, ...), torch.transpose(a, 0, 1): a view of a
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in VIEW_METHODS:
            node = node.func.value
        else:
            return node.id if isinstance(node, ast.Name) else None


def _written_by_call(call: ast.Call, imported: dict):
    """The expression whose elements ``call`` writes in place, or None: ``a[1, 0]`` of
    ``a[1, 0].fill_(9)``; the first argument where the method is reached through a class or
    a module (``torch.fill_(a, 9)``, ``torch.Tensor.fill_(a, 9)``, ``type(a).__setitem__(a,
    i, v)``) or is operator's (``operator.setitem(a, i, v)``)."""
    func = call.func
    if isinstance(func, ast.Name):  # from operator import setitem
        name = imported.get(func.id, "")
        return call.args[0] if name.startswith("operator.") and name[9:] in OPERATOR_WRITES and call.args else None
    if not isinstance(func, ast.Attribute):
        return None
    method = func.attr
    root, dot, rest = (dotted_name(func.value) or "").partition(".")
    owner = imported.get(root, root) + dot + rest  # torch.Tensor for T.Tensor after import torch as T
    if owner == "operator":
        return call.args[0] if method in OPERATOR_WRITES and call.args else None
    if not (
        (method.endswith("_") and not method.startswith("_") and method not in NOT_WRITES) or method in DUNDER_WRITES
    ):
        return None
    if _a_class_or_module(func.value, owner):
        return call.args[0] if call.args else None
    return func.value


def _a_class_or_module(node, owner: str) -> bool:
    """Whether ``node`` names torch, a tensor class or the type of something (``type(a)``,
    ``a.__class__``): a method reached through it takes the tensor as its first argument."""
    if owner in ("torch", "torch.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter"):
        return True
    if owner.split(".")[-1] in ("Tensor", "Parameter", "__class__"):
        return True
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type"


def _torch_view_function(call: ast.Call) -> bool:
    """Whether ``call`` is torch's function form of a view method, on its first argument."""
    func = call.func
    return (
        bool(call.args)
        and isinstance(func, ast.Attribute)
        and func.attr in VIEW_METHODS
        and isinstance(func.value, ast.Name)
        and func.value.id == "torch"
    )


def _bound_views(node) -> list[tuple[str, ast.AST]]:
    """(name, value) pairs an assignment or a loop binds, where the value may be a view."""
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        value = node.value
        pairs: list[tuple[str, ast.AST]] = []
        for target in targets:
            if isinstance(target, ast.Name) and value is not None:
                pairs.append((target.id, value))
            elif isinstance(target, (ast.Tuple, ast.List)):
                items = value.elts if isinstance(value, (ast.Tuple, ast.List)) else None
                for i, elt in enumerate(target.elts):
                    if isinstance(elt, ast.Name) and value is not None:  # u, v = a.split(2): both views of a
                        pairs.append((elt.id, items[i] if items and len(items) == len(target.elts) else value))
        return pairs
    if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)) and isinstance(node.target, ast.Name):
        return [(node.target.id, node.iter)]  # for row in a: each row is a view of a
    return []


def _binds_itself(node, value) -> bool:
    """Whether an assignment binds a name to the tensor another name holds (``u = a``; ``u,
    v = a, b``), not to a view (``u, v = a`` unpacks a's rows; ``for row in a`` takes them)."""
    if not isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) or not isinstance(value, ast.Name):
        return False
    if value is not node.value:
        return True  # an item of a tuple on the right
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return all(isinstance(t, ast.Name) for t in targets)


def _held_views(value) -> str | None:
    """The name whose views a list holds: ``[r for r in a]``, ``[a.T, a[0]]`` (its items
    written into write into that name)."""
    if isinstance(value, (ast.ListComp, ast.GeneratorExp)) and value.generators:
        return _view_root(value.generators[0].iter)
    if isinstance(value, (ast.List, ast.Tuple)) and value.elts:
        roots = {_view_root(e) for e in value.elts}
        return roots.pop() if len(roots) == 1 else None
    return None


# Code that reaches an attribute or a name by text it computes (``getattr(w, "gr" + "ad")``,
# ``eval``): a rule on names cannot see what it reaches, so such code breaks every such rule.
DYNAMIC = "<a name computed at run time>"
BY_NAME = frozenset({"getattr", "setattr", "delattr", "hasattr"})
RUNS_TEXT = frozenset({"eval", "exec", "compile", "__import__", "vars", "globals", "locals"})
BY_TEXT_CALLS = frozenset(
    {"importlib.import_module", "operator.attrgetter", "operator.methodcaller", "import_module", "attrgetter"}
    | {"methodcaller"}
)
# What hands out every attribute of an object, or finds one by its text: inspect.getmembers(F)
# holds scaled_dot_product_attention under no name a rule can read.
BY_MEMBERS = frozenset({"getmembers", "getmembers_static", "getattr_static"})
# torch's operators by their low-level names (torch.ops.aten.native_batch_norm, torch._C._nn):
# each public function is one of them under another name.
LOW_LEVEL = "<torch's low-level operators>"
LOW_LEVEL_ROOTS = ("torch.ops", "torch._ops", "torch._C", "torch._VF", "torch.library")


def _reached_by_text(call: ast.Call) -> str | None:
    """What a call reaches by a name given as text: ``.grad`` for ``getattr(w, "grad")``,
    DYNAMIC where the text is computed or runs as code; None for any other call."""
    func = dotted_name(call.func) or ""
    if func.removeprefix("builtins.") in BY_NAME and len(call.args) >= 2:
        name = call.args[1]
        if isinstance(name, ast.Constant) and isinstance(name.value, str):
            return "." + name.value
        return DYNAMIC
    if func.removeprefix("builtins.") in RUNS_TEXT or func in BY_TEXT_CALLS:
        return DYNAMIC
    if func.rpartition(".")[2] in BY_MEMBERS:
        return DYNAMIC
    return None


def _names_rule(key: str) -> bool:
    """Whether a forbid rule is about a name or an attribute (what text-reached names get around)."""
    return not key.endswith("[]=") and key not in CONSTRUCTS and key[:1] not in "'\"0123456789-"


def folded(node, depth: int = 0) -> str | None:
    """The text a string expression of literals only makes (``"cu" + "da"``, ``f"cu{'da'}"``),
    else None."""
    if depth > 50:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = folded(node.left, depth + 1), folded(node.right, depth + 1)
        return left + right if left is not None and right is not None else None
    if isinstance(node, ast.JoinedStr):
        parts = [
            folded(v.value if isinstance(v, ast.FormattedValue) else v, depth + 1)
            for v in node.values
            if not (isinstance(v, ast.FormattedValue) and (v.format_spec or v.conversion != -1))
        ]
        texts = [p for p in parts if p is not None]
        return "".join(texts) if len(texts) == len(node.values) else None
    return None


def _imported(tree) -> dict:
    """Each name an import binds to another dotted name: ``import torch.autograd as ag`` binds
    ag to torch.autograd, ``from torch.autograd import grad`` binds grad to torch.autograd.grad."""
    out: dict = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    out[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                if alias.name != "*":
                    out[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return out


def _torch_private(name: str) -> bool:
    """A name in torch's private API (``torch._fused_adamw_``, ``torch.nn.functional._in_projection``),
    under which any public function may run unnamed."""
    parts = name.split(".")
    return parts[0] == "torch" and any(p.startswith("_") and not p.startswith("__") for p in parts[1:])


def _tokens(name: str) -> list[str]:
    return [t for t in name.split("_") if t]


def _contains_rule(used_name: str, rule: str) -> bool:
    """Whether the last part of a used name holds a rule's last part, of two words or more, as
    its words in a row: native_batch_norm and batch_norm, poisson_nll_loss and nll_loss."""
    want = _tokens(rule.rsplit(".", 1)[-1])
    if len(want) < 2:
        return False
    have = _tokens(used_name.rsplit(".", 1)[-1])
    return any(have[i : i + len(want)] == want for i in range(len(have) - len(want) + 1))


_OBJECT_ROOTS = ("torch.", "torch.nn.", "torch.nn.functional.")
_ALIASES = {"nn": "torch.nn", "F": "torch.nn.functional"}


def _torch_object(path: str):
    """The torch object a dotted path names (``torch.nn.modules.batchnorm.BatchNorm1d``), read
    from the modules already imported; None where it names none."""
    import sys

    parts = path.split(".")
    if parts[0] in _ALIASES:
        parts = _ALIASES[parts[0]].split(".") + parts[1:]
    if parts[0] != "torch":
        return None
    obj = sys.modules.get("torch")
    for i, part in enumerate(parts[1:], 1):
        module = sys.modules.get(".".join(parts[: i + 1]))
        obj = module if module is not None else getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _rule_objects(rule: str) -> list:
    """What a rule names among torch's objects (``BatchNorm1d``: torch.nn.BatchNorm1d)."""
    rule = rule.strip(".")
    paths = [rule] if rule.startswith("torch.") or rule.split(".")[0] in _ALIASES else []
    paths += [root + rule for root in _OBJECT_ROOTS]
    found: list = []
    for path in paths:
        obj = _torch_object(path)
        if obj is not None and not isinstance(obj, (int, float, str, bool)) and all(obj is not f for f in found):
            found.append(obj)
    return found


def _used_rule(key: str, used: dict) -> str | None:
    """The key of ``used`` that a forbid rule matches: the rule itself; for a dotted rule
    (``autograd.grad``) a name used that ends with it (``torch.autograd.grad``); a name of torch
    that is the very object the rule names by another path (``torch.nn.modules.batchnorm.BatchNorm1d``
    for ``BatchNorm1d``); or one whose last part holds the rule's words (``native_batch_norm``)."""
    if key in used:
        return key
    if key.endswith("[]=") or key[:1] in "'\"0123456789-" or key.startswith("<"):
        return None
    if "." in key.strip(".") and not key.startswith("."):
        hit = next((name for name in used if name.endswith("." + key)), None)
        if hit is not None:
            return hit
    contained = next((name for name in used if not name.startswith("<") and _contains_rule(name, key)), None)
    if contained is not None:
        return contained
    objects = _rule_objects(key)
    for name in used:
        if name.startswith("torch.") and objects:
            obj = _torch_object(name)
            if obj is not None and any(obj is o for o in objects):
                return name
    return None


def _in_order(tree) -> list:
    return sorted(ast.walk(tree), key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))


def _used(tree, through=()) -> tuple[dict, dict]:
    """rule text -> first line it is used at, and for a write rule reached through a name bound
    to a view (``u = a.T`` then ``u[0, 1] = 9``), the name it went through.

    Names are followed in source order: a name rebound to something that is not a view stops
    being one. Names in ``through`` are the views the exercise means to be written through."""
    found: dict = {}
    via: dict = {}
    views: dict[str, str] = {}  # name -> the name it is a view of
    same: dict[str, bool] = {}  # name -> whether it was bound to that name itself (no view)
    imported = _imported(tree)  # g -> torch.autograd.grad for ``from torch.autograd import grad as g``

    def add(key, line):
        found.setdefault(key, line)

    def wrote(root, line):
        add(f"{root}[]=", line)
        seen = {root}
        name = root
        while name not in through and name in views and views[name] not in seen:
            name = views[name]
            seen.add(name)
            if f"{name}[]=" not in found:
                found[f"{name}[]="] = line
                direct = all(same.get(n, False) for n in seen - {name})
                via[f"{name}[]="] = f"{root}, another name for {name}" if direct else f"{root}, a view of {name}"

    for node in _in_order(tree):
        line = getattr(node, "lineno", 1)
        for name, value in _bound_views(node):
            root = _view_root(value) or _held_views(value)
            if root and root != name:
                views[name] = root
                # `alias = a` binds the tensor itself, not a view of it
                same[name] = _binds_itself(node, value)
            else:
                views.pop(name, None)
        for name, types in CONSTRUCTS.items():
            if isinstance(node, types):
                add(name, line)
        if isinstance(node, (ast.Attribute, ast.Name)):
            dotted = dotted_name(node)
            if dotted:
                root, _, rest = dotted.partition(".")
                written = [dotted]
                if root in imported:  # the name as imported: ag.grad is torch.autograd.grad
                    written.append(imported[root] + ("." + rest if rest else ""))
                if written[-1].split(".")[0] == "functorch":  # torch.func under its old name
                    written.append("torch.func" + written[-1][len("functorch") :])
                for name in written:
                    parts = name.split(".")
                    for i in range(1, len(parts) + 1):  # torch.nn.functional.relu: torch, torch.nn, ...
                        add(".".join(parts[:i]), line)
                    if any(name == r or name.startswith(r + ".") for r in LOW_LEVEL_ROOTS) or _torch_private(name):
                        add(LOW_LEVEL, line)
                if written[-1] in ("sys.modules", "builtins.__dict__"):  # modules looked up by text
                    add(DYNAMIC, line)
            if isinstance(node, ast.Attribute):
                add("." + node.attr, line)
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            target = dotted_name(node.value)
            if target:
                add(f"{target}[]=", line)
            root = _view_root(node.value)
            if root:
                wrote(root, line)
        if isinstance(node, ast.Call):
            reached = _reached_by_text(node)
            if reached is not None:
                add(reached, line)
        if isinstance(node, ast.Attribute) and node.attr in ("__dict__", "__getattribute__", "__getattr__"):
            add(DYNAMIC, line)
        if isinstance(node, ast.Call):
            written = _written_by_call(node, imported)
            root = _view_root(written) if written is not None else None
            if root:  # a[1, 0].fill_(9), a.t().zero_(): in place, into a's elements
                wrote(root, line)
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg == "out":  # torch.add(x, y, out=a[0]) writes into a
                    outs = keyword.value.elts if isinstance(keyword.value, (ast.Tuple, ast.List)) else [keyword.value]
                    for out in outs:
                        root = _view_root(out)
                        if root:
                            wrote(root, line)
        text = folded(node) if isinstance(node, (ast.BinOp, ast.JoinedStr)) else None
        if text is not None:  # "cu" + "da" is the literal 'cuda'
            add(repr(text), line)
            add(f'"{text}"', line)
        if isinstance(node, ast.Constant) and not isinstance(node.value, type(...)):
            add(repr(node.value), line)
            if isinstance(node.value, str):
                add(f'"{node.value}"', line)
        if isinstance(node, ast.alias):
            for i, _ in enumerate(node.name.split(".")):
                add(".".join(node.name.split(".")[: i + 1]), line)
            if any(node.name == r or node.name.startswith(r + ".") for r in LOW_LEVEL_ROOTS):
                add(LOW_LEVEL, line)
    return found, via


_NOT_CODE = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)


def _code_lines(source: str) -> int:
    lines: set = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type not in _NOT_CODE:
                lines.update(range(tok.start[0], tok.end[0] + 1))
    except (tokenize.TokenError, IndentationError):
        return len([ln for ln in source.splitlines() if ln.strip() and not ln.strip().startswith("#")])
    return len(lines)


def _normal(rule: str) -> str:
    rule = rule.strip()
    if len(rule) >= 2 and rule[0] == rule[-1] and rule[0] in "'\"":
        return repr(rule[1:-1])
    return rule


def check_source(check: dict, ctx: Context) -> Outcome:
    code = ctx.code or ""
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return Outcome(False, f"your code does not parse (line {exc.lineno}): {exc.msg}")
    used, via = _used(tree, set(check.get("through") or []))
    problems = []
    reported: set = set()  # one sentence per name used, however many rules it breaks
    for rule in check.get("forbid") or []:
        key = _normal(rule)
        if not key:
            raise AuthoringError("an empty forbid rule")
        if key in used and key.endswith("[]="):
            name = key[:-3]
            how = f", through {via[key]}" if key in via else ""
            problems.append(
                f"your code writes into an element of {name} (line {used[key]}{how}), which this exercise does not allow"
            )
        elif (hit := _used_rule(key, used)) is not None and hit not in reported:
            reported.add(hit)
            bare = key.lstrip(".")
            same = hit == key or hit.endswith("." + bare)
            what = rule if same else f"{hit.lstrip('.')}, a form of {bare}"
            problems.append(f"your code uses {what} (line {used[hit]}), which this exercise does not allow")
    names_rules = [r for r in check.get("forbid") or [] if _names_rule(_normal(r))]
    if names_rules and DYNAMIC in used and not problems:
        problems.append(
            f"your code reaches an attribute or a name by text (getattr with a computed name, eval, exec or "
            f"the like, line {used[DYNAMIC]}), which the rule against {join_names(names_rules)} cannot read: "
            "write names out"
        )
    if names_rules and LOW_LEVEL in used and not problems:
        problems.append(
            f"your code calls torch's operators by their low-level names or its private functions (torch.ops, "
            f"torch._C, a name starting with _, line {used[LOW_LEVEL]}), under which any of "
            f"{join_names(names_rules)} may run unnamed: use torch's public functions"
        )
    missing = [r for r in check.get("require") or [] if _used_rule(_normal(r), used) is None]
    if missing:
        problems.append(f"your code must use {join_names(missing)}")
    max_lines = check.get("max_lines")
    if max_lines is not None:
        n = _code_lines(code)
        if n > max_lines:
            problems.append(f"your code has {plural(n, 'line')}, at most {max_lines} allowed")
    max_statements = check.get("max_statements")
    if max_statements is not None:
        n = sum(isinstance(node, ast.stmt) for node in ast.walk(tree))
        if n > max_statements:
            problems.append(f"your code has {plural(n, 'statement')}, at most {max_statements} allowed")
    if problems:
        return Outcome(False, "; ".join(problems))
    label = check.get("label") or "your code follows the exercise's rules"
    return Outcome(True, f"✓ {label}")
