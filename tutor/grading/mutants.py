"""Mutants of a reference solution: small, plausible bugs that the checks must catch.

``pack test`` runs each mutant like a wrong solution; one that passes every check shows a
weak check (docs/pack-format.md, "Mutants"). Everything here reads source with ``ast``
and writes it back by splicing the changed span into the original text, so a mutant's
diff is one or two lines and the rest of the file is untouched. Standard library only:
the literal operator gets the reference's computed values as data (``literal_values``).
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import itertools
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass

OPERATORS = ("drop", "in-place", "swap-names", "literal", "typed-in", "mean-sum", "dim", "off-by-one", "weights-only")

# Calls whose omission is a classic bug; dropped from a chain (``x.cpu().numpy()`` -> ``x.numpy()``).
DROPPABLE = frozenset(
    {"step", "zero_grad", "backward", "eval", "train", "to", "cpu", "cuda", "detach", "clone", "seek", "contiguous"}
)
# Out-of-place methods whose in-place twin (name + "_") exists on tensors.
OUT_OF_PLACE = frozenset(
    {"add", "sub", "mul", "div", "clamp", "relu", "sigmoid", "tanh", "pow", "abs", "neg", "exp", "sqrt", "t", "squeeze"}
    | {"unsqueeze", "transpose", "fill", "zero", "copy", "masked_fill", "scatter", "index_add", "normal", "uniform"}
)
# Methods (tensor.m(dim)) and functions (torch.f(x, dim)) whose first/second positional int is a dim.
DIM_METHODS = frozenset(
    {"sum", "mean", "softmax", "log_softmax", "argmax", "argmin", "max", "min", "cumsum", "prod", "std", "var"}
    | {"squeeze", "unsqueeze", "flatten", "norm", "all", "any", "logsumexp", "unbind", "flip", "size"}
)
DIM_FUNCTIONS = DIM_METHODS | {"cat", "stack", "concat", "concatenate"}
COMMUTATIVE = (ast.Add, ast.Mult, ast.BitAnd, ast.BitOr, ast.BitXor)
# Names that stand for modules even where the setup, not the solution, imports them.
MODULE_NAMES = frozenset({"torch", "nn", "F", "np", "numpy", "init", "math", "io", "random"})
MAX_LITERAL_ELEMENTS = 256  # a value a learner could type in from the prompt
_BUILTINS = frozenset(dir(builtins))


@dataclass(frozen=True)
class Mutant:
    id: str  # the operator and a digest of what changed: stable while that text stays
    operator: str
    line: int  # 1-based, in the reference solution's text
    source: str
    diff: str  # the changed lines, "-old" then "+new"

    def matches(self, declared: str) -> bool:
        return declares(declared, self.id, self.diff)


def declares(declared: str, mutant_id: str, diff: str) -> bool:
    """A declaration (``equivalent_mutants``) names a mutant by id, or by text its diff contains."""
    return declared == mutant_id or declared in diff


@dataclass(frozen=True)
class _Edit:
    operator: str
    line: int
    start: int  # byte offsets into the UTF-8 source
    end: int
    text: str


class _Source:
    def __init__(self, source: str) -> None:
        self.text = source
        self.data = source.encode("utf-8")
        self.starts = [0]
        for line in self.data.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))

    def offset(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def span(self, node: ast.AST) -> tuple[int, int]:
        end_line, end_col = node.end_lineno, node.end_col_offset  # type: ignore[attr-defined]
        assert end_line is not None and end_col is not None
        return self.offset(node.lineno, node.col_offset), self.offset(end_line, end_col)  # type: ignore[attr-defined]

    def segment(self, node: ast.AST) -> str:
        start, end = self.span(node)
        return self.data[start:end].decode("utf-8")

    def indent(self, node: ast.stmt) -> str | None:
        """The statement's indentation, or None when something precedes it on its line (``a; b``)."""
        start = self.starts[node.lineno - 1]
        prefix = self.data[start : start + node.col_offset].decode("utf-8")
        return prefix if not prefix.strip() else None

    def apply(self, edit: _Edit) -> str:
        return (self.data[: edit.start] + edit.text.encode("utf-8") + self.data[edit.end :]).decode("utf-8")


def _atom(node: ast.expr) -> str:
    """Source for ``node`` that can stand wherever an expression stood."""
    text = ast.unparse(node)
    if isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant, ast.List, ast.Tuple)):
        return text
    return f"({text})"


def _replace(src: _Source, operator: str, node: ast.AST, text: str) -> _Edit:
    start, end = src.span(node)
    return _Edit(operator, node.lineno, start, end, text)  # type: ignore[attr-defined]


def _imported_names(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names |= {a.asname or a.name for a in node.names}
    return names


def _callee(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def _simple_statements(tree: ast.Module) -> Iterator[ast.stmt]:
    """Statements that hold no other statements, at any depth."""
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and not any(
            isinstance(getattr(node, f, None), list) and getattr(node, f) and isinstance(getattr(node, f)[0], ast.stmt)
            for f in ("body", "orelse", "finalbody", "handlers")
        ):
            yield node


# ---------------------------------------------------------------- operators


def _drop(src: _Source, tree: ast.Module) -> Iterator[_Edit]:
    whole = set()  # calls that are a statement: dropping the statement says it all
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            whole.add(id(node.value))
            if _callee(node.value) != "print":
                yield _replace(src, "drop", node, "pass")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in DROPPABLE
            and id(node) not in whole
        ):
            yield _replace(src, "drop", node, _atom(node.func.value))


def _root(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _in_place(src: _Source, tree: ast.Module) -> Iterator[_Edit]:
    """Tensor methods only: a module's ``f_`` and ``f`` (``nn.init``, ``clip_grad_norm_``)
    are the same function under an old name, not an in-place twin."""
    modules = _imported_names(tree) | MODULE_NAMES
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _root(node.func) not in modules:
            attr = node.func.attr
            if attr.endswith("_") and not attr.startswith("_") and len(attr) > 1:
                swapped = attr[:-1]
            elif attr in OUT_OF_PLACE and _root(node.func.value) is not None:
                # on a tensor someone holds: in place on a temporary only it sees changes nothing
                swapped = attr + "_"
            else:
                continue
            call = ast.Call(ast.Attribute(node.func.value, swapped, ast.Load()), node.args, node.keywords)
            yield _replace(src, "in-place", node, ast.unparse(call))
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            name = node.target.id
            value = ast.BinOp(ast.Name(name, ast.Load()), node.op, node.value)
            yield _replace(src, "in-place", node, f"{name} = {ast.unparse(value)}")
        elif (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.BinOp)
            and isinstance(node.value.left, ast.Name)
            and node.value.left.id == node.targets[0].id
        ):
            op = ast.unparse(ast.AugAssign(node.targets[0], node.value.op, node.value.right))
            yield _replace(src, "in-place", node, op)


def _swap_names(src: _Source, tree: ast.Module) -> Iterator[_Edit]:
    """Two variables in the same role swapped: neighbouring arguments of one call, the two
    operands of one operator, neighbouring items of one tuple or list (``f(a, b)`` -> ``f(b, a)``).
    Operands of ``+``, ``*``, ``==`` and the like are left alone: swapped, they mean the same."""
    skip = _imported_names(tree) | _BUILTINS | MODULE_NAMES | {"DEVICE"}

    def variable(node: ast.expr) -> bool:
        return isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in skip

    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            groups = [node.args]
        elif isinstance(node, ast.BinOp) and not isinstance(node.op, COMMUTATIVE):
            groups = [[node.left, node.right]]
        elif (
            isinstance(node, ast.Compare)
            and len(node.comparators) == 1
            and not isinstance(node.ops[0], (ast.Eq, ast.NotEq, ast.Is, ast.IsNot))
        ):
            groups = [[node.left, node.comparators[0]]]
        elif isinstance(node, (ast.Tuple, ast.List)) and isinstance(node.ctx, ast.Load):
            groups = [node.elts]
        else:
            continue
        for group in groups:
            for a, b in itertools.pairwise(group):
                if variable(a) and variable(b) and a.id != b.id:  # type: ignore[attr-defined]
                    # One edit spanning both names keeps the splice a single replacement.
                    a_start, a_end = src.span(a)
                    b_start, b_end = src.span(b)
                    middle = src.data[a_end:b_start].decode("utf-8")
                    yield _Edit("swap-names", a.lineno, a_start, b_end, b.id + middle + a.id)  # type: ignore[attr-defined]


def _mean_sum(src: _Source, tree: ast.Module) -> Iterator[_Edit]:
    other = {"mean": "sum", "sum": "mean"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in other:
            func = ast.Attribute(node.func.value, other[node.func.attr], ast.Load())
            yield _replace(src, "mean-sum", node.func, ast.unparse(func))
        elif (
            isinstance(node, ast.keyword)
            and node.arg == "reduction"
            and isinstance(node.value, ast.Constant)
            and node.value.value in other
        ):
            yield _replace(src, "mean-sum", node.value, repr(other[node.value.value]))


def _other_dim(value: int) -> int:
    return 1 if value == 0 else (0 if value > 0 else value + 1 if value < -1 else 0)


def _dim(src: _Source, tree: ast.Module) -> Iterator[_Edit]:
    def int_const(node: ast.expr) -> int | None:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if (
            isinstance(node, ast.UnaryOp)
            and isinstance(node.op, ast.USub)
            and isinstance(node.operand, ast.Constant)
            and type(node.operand.value) is int
        ):
            return -node.operand.value
        return None

    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for kw in node.keywords:
            value = int_const(kw.value) if kw.arg == "dim" else None
            if value is not None:
                yield _replace(src, "dim", kw.value, str(_other_dim(value)))
        name = _callee(node)
        if not isinstance(node.func, ast.Attribute) or name is None:
            continue
        module = isinstance(node.func.value, ast.Name) and node.func.value.id in MODULE_NAMES
        index = 1 if module else 0
        if name in (DIM_FUNCTIONS if module else DIM_METHODS) and len(node.args) > index:
            value = int_const(node.args[index])
            if value is not None:
                yield _replace(src, "dim", node.args[index], str(_other_dim(value)))


BOUNDARY = {ast.Lt: "<=", ast.LtE: "<", ast.Gt: ">=", ast.GtE: ">"}
COUNTS = frozenset({"len", "arange", "size", "numel", "shape", "range"})  # what makes a bound a count


def _one_less(node: ast.expr) -> str:
    """``node - 1``, folded where it is an int (``6`` -> ``5``, ``-1`` -> ``-2``)."""
    try:
        value = ast.literal_eval(node)
    except ValueError:
        value = None
    if type(value) is int:
        return str(value - 1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        return f"{ast.unparse(node)} - 1"  # left to right: no parentheses needed
    return f"{_atom(node)} - 1"


def _counts(node: ast.expr) -> bool:
    """Whether ``node`` holds a count: ``len(...)``, ``arange``, ``.shape``, ``.size()`` (an
    int constant alone does not: ``x > 0`` on floats is the same at every value but a tie)."""
    for sub in ast.walk(node):
        if (isinstance(sub, ast.Name) and sub.id in COUNTS) or (isinstance(sub, ast.Attribute) and sub.attr in COUNTS):
            return True
    return False


def _off_by_one(src: _Source, tree: ast.Module) -> Iterator[_Edit]:
    """A boundary one off: a comparison of counts or indices that takes its bound or leaves it
    (``i < len(xs) - 1`` -> ``<=``; other comparisons, of measured floats where a tie hardly
    ever happens, are left alone), a ``range`` that stops one early, a slice that ends one early
    (``x[i:i + k]`` -> ``x[i:i + k - 1]``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in BOUNDARY:
            left, right = node.left, node.comparators[0]
            if _counts(left) or _counts(right):
                start, left_end = src.span(left)
                right_start, end = src.span(right)
                middle = src.data[left_end:right_start].decode("utf-8")
                op = BOUNDARY[type(node.ops[0])]
                text = src.segment(left) + re.sub(r"[<>]=?", op, middle, count=1) + src.segment(right)
                yield _Edit("off-by-one", node.lineno, start, end, text)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range" and node.args:
            stop = node.args[0] if len(node.args) == 1 else node.args[1]
            yield _replace(src, "off-by-one", stop, _one_less(stop))
        elif isinstance(node, ast.Slice) and node.upper is not None:
            yield _replace(src, "off-by-one", node.upper, _one_less(node.upper))


def _weights_only(src: _Source, tree: ast.Module) -> Iterator[_Edit]:
    """``torch.load(..., weights_only=True)`` that falls back to a full unpickle when refused."""
    for stmt in _simple_statements(tree):
        indent = src.indent(stmt)
        if indent is None or not isinstance(stmt, (ast.Assign, ast.Expr, ast.AnnAssign, ast.Return)):
            continue
        for node in ast.walk(stmt):
            if not (isinstance(node, ast.Call) and _callee(node) == "load"):
                continue
            flags = [
                kw
                for kw in node.keywords
                if kw.arg == "weights_only" and isinstance(kw.value, ast.Constant) and kw.value.value is True
            ]
            if not flags:
                continue
            start, end = src.span(flags[0].value)
            unsafe = src.data[:start] + b"False" + src.data[end:]
            s_start, s_end = src.span(stmt)
            fallback = unsafe[s_start : s_end + len(unsafe) - len(src.data)].decode("utf-8")
            rewind = ""
            if node.args and isinstance(node.args[0], ast.Name):
                rewind = f"{indent}    getattr({node.args[0].id}, 'seek', lambda _: None)(0)\n"
            text = f"try:\n{indent}    {src.segment(stmt)}\n{indent}except Exception:\n{rewind}{indent}    {fallback}"
            yield _Edit("weights-only", stmt.lineno, s_start, s_end, text)
            break


def _literal(src: _Source, tree: ast.Module, literals: dict[str, str]) -> Iterator[_Edit]:
    for name, stmt in final_assignments(tree).items():
        if name in literals and stmt.value is not None:
            yield _replace(src, "literal", stmt.value, literals[name])


def _typed_in(src: _Source, tree: ast.Module, typed: dict[str, str]) -> Iterator[_Edit]:
    """The whole solution replaced by its imports and the checked values typed in: the answer
    of a learner who copies what the reference printed. Unlike ``literal`` it reaches names the
    solution fills without a final assignment (``shapes.append(...)`` in a hook, ``x.add_(1)``,
    a list built in a loop)."""
    if not typed:
        return
    imports = [src.segment(stmt) for stmt in tree.body if isinstance(stmt, (ast.Import, ast.ImportFrom))]
    lines = [*imports, *(f"{name} = {text}" for name, text in typed.items())]
    yield _Edit("typed-in", 1, 0, len(src.data), "\n".join(lines) + "\n")


# ---------------------------------------------------------------- the literal operator's data


def final_assignments(tree: ast.Module) -> dict[str, ast.Assign | ast.AnnAssign]:
    """Each top-level name's last write, where that write is a plain ``name = ...`` at top
    level (a name written again later, in a loop or a ``with`` too, is left out)."""
    found: dict[str, ast.Assign | ast.AnnAssign] = {}
    for stmt in tree.body:
        for name in _written(stmt):
            found.pop(name, None)
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            found[stmt.targets[0].id] = stmt
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            found[stmt.target.id] = stmt
    return found


def _written(node: ast.AST) -> set[str]:
    """Names a statement binds in its own scope (not inside the functions or classes it defines)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return _imported_names(node)
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
        return {node.id}
    if isinstance(node, ast.Lambda):
        return set()
    out: set[str] = set()
    for child in ast.iter_child_nodes(node):
        out |= _written(child)
    return out


def literal_targets(solution: str, setup: str, checked_text: str) -> list[str]:
    """Names whose final value is worth writing as a literal: assigned last at top level,
    read by a check (their name appears in ``checked_text``), and computed from something
    the setup defines (a value that depends on no data is a literal already)."""
    tree = _reading_setup(solution, setup)
    if tree is None:
        return []
    return [name for name in final_assignments(tree) if re.search(rf"\b{re.escape(name)}\b", checked_text)]


def typed_in_targets(solution: str, setup: str, checked_text: str) -> list[str]:
    """Names a typed-in answer would write: read by a check and named by the solution (written,
    changed in place or filled), in the order the solution first names them; only where the
    solution reads the setup's data (as ``literal_targets``)."""
    tree = _reading_setup(solution, setup)
    if tree is None:
        return []
    defined = _imported_names(tree) | {
        n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }
    named = sorted((n for n in ast.walk(tree) if isinstance(n, ast.Name)), key=lambda n: (n.lineno, n.col_offset))
    out: list[str] = []
    for node in named:
        name = node.id
        if name in out or name in defined or name in MODULE_NAMES or name in _BUILTINS or name == "DEVICE":
            continue
        if re.search(rf"\b{re.escape(name)}\b", checked_text):
            out.append(name)
    return out


def _reading_setup(solution: str, setup: str) -> ast.Module | None:
    """The solution's tree where it reads something the setup defines (a value that depends
    on no data is a literal already, and typing it in is no bug); None otherwise."""
    try:
        tree, setup_tree = ast.parse(solution), ast.parse(setup)
    except SyntaxError:
        return None
    given = {
        n.id for n in ast.walk(setup_tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    } | _imported_names(setup_tree)
    given -= _imported_names(tree)
    reads = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return tree if reads & given else None


def literal_source(value: dict, *, torch_name: str = "torch", on_device: bool = False, depth: int = 0) -> str | None:
    """Python source for a value the kernel reported as data (see packtest's values cell):
    ``{"kind": "tensor", "dtype", "values", "requires_grad"}``, ``{"kind": "number", "value"}``
    or ``{"kind": "sequence", "type": "list" | "tuple" | "size", "items": [...]}``."""
    if value.get("kind") == "sequence":
        return _sequence_source(value, torch_name, on_device, depth)
    if value.get("kind") == "number":
        number = value.get("value")
        if isinstance(number, (bool, int)) or (isinstance(number, float) and math.isfinite(number)):
            return repr(number)
        return None
    if value.get("kind") != "tensor":
        return None
    dtype = str(value.get("dtype", ""))
    if not dtype.startswith("torch.") or not dtype[6:].isidentifier():
        return None
    values = value.get("values")
    if not _plain_numbers(values):
        return None
    extra = ", device=DEVICE" if on_device else ""
    if value.get("requires_grad"):
        extra += ", requires_grad=True"
    return f"{torch_name}.tensor({values!r}, dtype={dtype}{extra})"


def _sequence_source(value: dict, torch_name: str, on_device: bool, depth: int) -> str | None:
    items = value.get("items")
    if depth >= 4 or not isinstance(items, list) or len(items) > MAX_LITERAL_ELEMENTS:
        return None
    kind = value.get("type")
    if kind == "size":
        if not all(isinstance(i, dict) and type(i.get("value")) is int for i in items):
            return None
        return f"{torch_name}.Size({[i['value'] for i in items]!r})"
    texts = [
        literal_source(i, torch_name=torch_name, on_device=on_device, depth=depth + 1) if isinstance(i, dict) else None
        for i in items
    ]
    if any(t is None for t in texts):
        return None
    if kind == "list":
        return "[" + ", ".join(texts) + "]"  # type: ignore[arg-type]
    if kind == "tuple":
        return "(" + ", ".join(texts) + ("," if len(texts) == 1 else "") + ")"  # type: ignore[arg-type]
    return None


def _plain_numbers(values: object, depth: int = 0) -> bool:
    if depth > 8:
        return False
    if isinstance(values, list):
        return all(_plain_numbers(v, depth + 1) for v in values)
    return isinstance(values, (bool, int)) or (isinstance(values, float) and math.isfinite(values))


# ---------------------------------------------------------------- all together


def mutants(solution: str, literals: dict[str, str] | None = None, typed: dict[str, str] | None = None) -> list[Mutant]:
    """Every mutant of ``solution`` that parses and differs from it and from the others.

    ``literals``: {name: source} for the literal operator, ``typed`` for the typed-in one
    (``literal_source`` of the values the reference computed)."""
    try:
        tree = ast.parse(solution)
    except SyntaxError:
        return []
    src = _Source(solution)
    edits: list[_Edit] = []
    for operator in (_drop, _in_place, _swap_names, _mean_sum, _dim, _off_by_one, _weights_only):
        edits += operator(src, tree)
    edits += _literal(src, tree, literals or {})
    edits += _typed_in(src, tree, typed or {})
    seen = {ast.dump(tree)}
    occurrences: dict[str, int] = {}
    out: list[Mutant] = []
    # typed-in last: where it writes what a literal mutant wrote, the smaller diff is kept
    for edit in sorted(edits, key=lambda e: (e.operator == "typed-in", e.start, OPERATORS.index(e.operator), e.end)):
        source = src.apply(edit)
        try:
            shape = ast.dump(ast.parse(source))
        except SyntaxError:
            continue
        if shape in seen:
            continue
        seen.add(shape)
        before = src.data[edit.start : edit.end].decode("utf-8")
        what = f"{edit.operator}\0{before}\0{edit.text}"
        nth = occurrences.get(what, 0)
        occurrences[what] = nth + 1
        digest = hashlib.sha256(f"{what}\0{nth}".encode()).hexdigest()[:8]
        out.append(Mutant(f"{edit.operator}-{digest}", edit.operator, edit.line, source, _diff(solution, source, edit)))
    return out


def _diff(before: str, after: str, edit: _Edit) -> str:
    """The lines the edit touched, "-" as they were and "+" as they are now."""
    old = before.splitlines()
    first = edit.line - 1
    spanned = before.encode("utf-8")[edit.start : edit.end].decode("utf-8").count("\n") + 1
    grown = edit.text.count("\n") + 1
    new = after.splitlines()[first : first + grown]
    removed = [f"-{line}" for line in old[first : first + spanned]]
    return "\n".join([*removed, *(f"+{line}" for line in new)])
