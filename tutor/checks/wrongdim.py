"""A dim that makes the learner's failing line run: ``logits.argmax(dim=0) == y`` raises for
logits of shape (200, 2), and with dim 1 the same line runs on the same shapes.

The line is not run again, and no code of the learner's runs here: the statement is read
(ast) and worked out on meta tensors of the shapes its tensors had when it raised
(errorcause.context), by a small interpreter that knows tensors, their shapes and a fixed
list of torch functions and methods, and nothing else (a call of anything else, a module,
a name that held no tensor: a value it does not know, which nothing further is worked out
from). Each integer that names a dim (``dim=``, the dims of ``transpose``, ``cat``'s,
``shape[k]``) is tried with each other dim of its tensor. It is said only when all of these
hold:

- the line as written raises on those shapes too (a shape error: sizes that do not match);
- the reference's code uses the same function or method with the other dim, and not with
  the learner's (so the reference reads the dims that way too, on tensors it names alike);
- exactly one such change, at one place, makes the line run.

The places tried are the failing line's, and those of the one earlier line of the same
function that binds a tensor the failing line uses, where that line, worked out from the
failing line's tensors, gives the shape the tensor had (``ones = torch.ones(x.shape[1], 1)``
before ``torch.cat([x, ones], dim=1)``).

It is then "consistent with" a wrong dim: established is that the line runs with it.
"""

from __future__ import annotations

import ast
import re

import torch

from .describe import shorten
from .dotted import dotted_name

# What a shape error says: the sizes of two tensors do not fit together.
SHAPE_ERRORS = re.compile(
    r"must match the size of tensor|Sizes of tensors must match|shapes cannot be multiplied|"
    r"Dimension out of range|is invalid for input of size|size mismatch|Expected size|"
    r"expected .*(?:size|shape|dim)|does not match|cannot be broadcast|stack expects each tensor",
    re.I,
)

# Methods worked out on meta tensors; the positions of their dim arguments.
METHOD_DIMS: dict[str, tuple] = {
    "argmax": (0,),
    "argmin": (0,),
    "sum": (0,),
    "mean": (0,),
    "max": (0,),
    "min": (0,),
    "amax": (0,),
    "amin": (0,),
    "softmax": (0,),
    "log_softmax": (0,),
    "logsumexp": (0,),
    "cumsum": (0,),
    "std": (0,),
    "var": (0,),
    "prod": (0,),
    "squeeze": (0,),
    "unsqueeze": (0,),
    "transpose": (0, 1),
    "size": (0,),
    "norm": (),
    "all": (0,),
    "any": (0,),
}
METHODS = set(METHOD_DIMS) | {
    "float", "double", "long", "int", "bool", "half", "view", "reshape", "flatten", "permute", "t",
    "matmul", "mm", "bmm", "expand", "repeat", "contiguous", "clone", "detach", "abs", "exp", "log",
    "sqrt", "pow", "eq", "ne", "gt", "lt", "ge", "le", "masked_fill", "add", "sub", "mul", "div",
    "relu", "sigmoid", "tanh", "type_as", "view_as", "expand_as", "reshape_as", "new_ones",
    "new_zeros", "new_full", "new_empty", "neg", "square", "clamp", "dim", "numel",
}  # fmt: skip
# torch.<name> (and torch.nn.functional.<name>, F.<name>): the position of their dim argument.
FUNCTION_DIMS: dict[str, tuple] = {
    "cat": (1,),
    "concat": (1,),
    "stack": (1,),
    "softmax": (1,),
    "log_softmax": (1,),
    "argmax": (1,),
    "argmin": (1,),
    "sum": (1,),
    "mean": (1,),
    "max": (1,),
    "min": (1,),
    "logsumexp": (1,),
    "cumsum": (1,),
    "squeeze": (1,),
    "unsqueeze": (1,),
    "transpose": (1, 2),
}
FUNCTIONS = set(FUNCTION_DIMS) | {
    "matmul", "bmm", "mm", "ones", "zeros", "full", "empty", "ones_like", "zeros_like", "full_like",
    "where", "exp", "log", "sqrt", "tril", "triu", "relu", "sigmoid", "tanh", "maximum", "minimum",
    "clamp", "abs", "eye", "cross_entropy", "nll_loss", "mse_loss", "linear",
}  # fmt: skip
DTYPES = {"float32", "float64", "float16", "bfloat16", "int64", "int32", "bool", "float", "long", "double", "int"}
BINARY = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Pow: lambda a, b: a**b,
    ast.MatMult: lambda a, b: a @ b,
    ast.Mod: lambda a, b: a % b,
}
COMPARE = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.Gt: lambda a, b: a > b,
    ast.LtE: lambda a, b: a <= b,
    ast.GtE: lambda a, b: a >= b,
}
MAX_TRIES = 200  # evaluations of one line, all places and dims together


class _Unknown:
    """A value the interpreter does not know (a module's output, a number it was not given)."""


UNKNOWN = _Unknown()


class _Refused(Exception):
    """Something this interpreter does not work out: nothing is said."""


class _Interpreter:
    def __init__(self, tensors: dict, assumed: dict | None = None):
        self.tensors = tensors  # name or dotted name -> meta tensor
        self.assumed = assumed or {}  # id of a call node -> the meta tensor it is taken to give
        self.said = ""  # what was assumed, in words

    def run(self, node: ast.AST):
        try:
            self.eval(node)
        except _Refused:
            raise
        except Exception as exc:  # what torch raised for these shapes
            return exc
        return None

    def eval(self, node):
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (int, float, bool, str)) or node.value is None:
                return node.value
            raise _Refused
        if isinstance(node, ast.Name):
            return self.tensors.get(node.id, UNKNOWN)
        if isinstance(node, ast.Attribute):
            return self.attribute(node)
        if isinstance(node, ast.Subscript):
            return self.subscript(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.BinOp):
            return self.binary(BINARY.get(type(node.op)), self.eval(node.left), self.eval(node.right))
        if isinstance(node, ast.UnaryOp):
            value = self.eval(node.operand)
            if value is UNKNOWN:
                return UNKNOWN
            if isinstance(node.op, ast.USub):
                return -value
            if isinstance(node.op, ast.Invert) and isinstance(value, torch.Tensor):
                return ~value
            if isinstance(node.op, ast.UAdd):
                return value
            raise _Refused
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1:
                raise _Refused
            return self.binary(COMPARE.get(type(node.ops[0])), self.eval(node.left), self.eval(node.comparators[0]))
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.eval(e) for e in node.elts]
        raise _Refused

    @staticmethod
    def binary(op, a, b):
        if op is None:
            raise _Refused
        if a is UNKNOWN or b is UNKNOWN:
            # A number it was not given (math.sqrt(d)) scales a tensor elementwise and keeps its
            # shape; anything else is not known.
            known = b if a is UNKNOWN else a
            return known * 1 if isinstance(known, torch.Tensor) and op is not BINARY[ast.MatMult] else UNKNOWN
        if not isinstance(a, (torch.Tensor, int, float, bool)) or not isinstance(b, (torch.Tensor, int, float, bool)):
            raise _Refused
        if op is BINARY[ast.Pow] and _huge_power(a, b):
            raise _Refused  # 10 ** 10 ** 9, written on the learner's line, would take the judge's time
        return op(a, b)

    def attribute(self, node: ast.Attribute):
        dotted = dotted_name(node)
        if dotted in self.tensors:
            return self.tensors[dotted]
        if dotted is not None and dotted.startswith("torch.") and dotted[6:] in DTYPES:
            return getattr(torch, dotted[6:])
        owner = self.eval(node.value)
        if isinstance(owner, torch.Tensor):
            if node.attr == "shape":
                return tuple(owner.shape)
            if node.attr in ("T", "mT"):
                return getattr(owner, node.attr)
            if node.attr in ("dtype", "ndim"):
                return getattr(owner, node.attr)
            if node.attr == "device":
                return torch.device("meta")
        return UNKNOWN

    def subscript(self, node: ast.Subscript):
        owner = self.eval(node.value)
        if owner is UNKNOWN:
            return UNKNOWN
        index = node.slice
        if isinstance(owner, tuple) and all(isinstance(s, int) for s in owner):  # a shape
            key = self.eval(index)
            if not isinstance(key, int):
                raise _Refused
            return owner[key]
        if isinstance(owner, torch.Tensor):
            return owner[self.index(index)]
        raise _Refused

    def index(self, node):
        if isinstance(node, ast.Tuple):
            return tuple(self.index(e) for e in node.elts)
        if isinstance(node, ast.Slice):
            parts = [None if p is None else self.eval(p) for p in (node.lower, node.upper, node.step)]
            if any(p is not None and not isinstance(p, int) for p in parts):
                raise _Refused
            return slice(*parts)
        value = self.eval(node)
        if value is None or value is Ellipsis or isinstance(value, int):
            return value
        raise _Refused

    def call(self, node: ast.Call):
        func = node.func
        args = [self.eval(a) for a in node.args if not isinstance(a, ast.Starred)]
        if id(node) in self.assumed:
            return self.assumed[id(node)]
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise _Refused
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise _Refused
            kwargs[kw.arg] = torch.device("meta") if kw.arg == "device" else self.eval(kw.value)
        values = [*args, *kwargs.values()]
        dotted = dotted_name(func) if isinstance(func, ast.Attribute) else None
        name = _torch_function(dotted)
        if name is not None:
            if any(v is UNKNOWN for v in _flat(values)):
                return UNKNOWN
            if name in ("ones", "zeros", "full", "empty", "eye"):
                kwargs["device"] = torch.device("meta")
            space = torch.nn.functional if name in ("cross_entropy", "nll_loss", "mse_loss", "linear") else torch
            return getattr(space, name)(*args, **kwargs)
        if isinstance(func, ast.Attribute):
            owner = self.eval(func.value)
            if isinstance(owner, torch.Tensor) and func.attr in METHODS:
                if any(v is UNKNOWN for v in _flat(values)):
                    return UNKNOWN
                return getattr(owner, func.attr)(*args, **kwargs)
        if isinstance(func, ast.Name) and func.id == "len" and len(args) == 1 and isinstance(args[0], torch.Tensor):
            return len(args[0])
        return UNKNOWN  # a module, the learner's own function, .item(): not worked out


def _huge_power(a, b) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return False
    return not (abs(b) <= 64 and abs(a) < 2**32)


def _flat(values):
    for v in values:
        if isinstance(v, (list, tuple)):
            yield from _flat(v)
        else:
            yield v


def _torch_function(dotted: str | None) -> str | None:
    if dotted is None:
        return None
    for prefix in ("torch.nn.functional.", "F.", "torch."):
        if dotted.startswith(prefix):
            name = dotted[len(prefix) :]
            return name if name in FUNCTIONS else None
    return None


class _Place:
    """An integer in the line that names a dim: where it is, what it is, how many dims it counts."""

    def __init__(self, node: ast.expr, call: str, slot, receiver: ast.AST | None, whole: ast.AST):
        self.node, self.call, self.slot, self.receiver, self.whole = node, call, slot, receiver, whole

    def text(self, value: int | None = None) -> str:
        """The call (or ``X.shape[k]``) as written, or with ``value`` for this dim."""
        if value is None:
            return ast.unparse(self.whole)
        original = self.value
        _set(self.node, value)
        try:
            return ast.unparse(self.whole)
        finally:
            _set(self.node, original)

    @property
    def value(self) -> int:
        return _int(self.node)


def _int(node) -> int:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = node.operand
        if isinstance(inner, ast.Constant) and type(inner.value) is int:
            return -inner.value
    raise ValueError


def _is_int(node) -> bool:
    try:
        _int(node)
    except ValueError:
        return False
    return True


def _places(tree: ast.AST) -> list:
    """Every dim the line names in a call this module knows, and every ``X.shape[k]``."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
            if _is_int(node.slice):
                out.append(_Place(node.slice, "shape", 0, node.value.value, node))
            continue
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        name = _torch_function(dotted_name(node.func))
        if name is not None:
            positions, receiver = FUNCTION_DIMS.get(name, ()), node.args[0] if node.args else None
            offset = 1
        elif node.func.attr in METHOD_DIMS:
            name, positions, receiver, offset = node.func.attr, METHOD_DIMS[node.func.attr], node.func.value, 0
        else:
            continue
        for position in positions:
            if position < len(node.args) and _is_int(node.args[position]):
                out.append(_Place(node.args[position], name, position - offset, receiver, node))
        for kw in node.keywords:
            if kw.arg in ("dim", "dim0", "dim1") and _is_int(kw.value):
                slot = {"dim": 0, "dim0": 0, "dim1": 1}[kw.arg]
                out.append(_Place(kw.value, name, slot, receiver, node))
    return out


def _receiver_dims(place: _Place, run: _Interpreter) -> int | None:
    try:
        value = run.eval(place.receiver) if place.receiver is not None else None
    except Exception:
        return None
    if isinstance(value, list) and value and all(isinstance(v, torch.Tensor) for v in value):
        value = value[0]  # cat / stack: the tensors' dims
    if not isinstance(value, torch.Tensor):
        return None
    return value.dim() + (1 if place.call in ("unsqueeze", "stack") else 0)


def _set(node, value: int) -> None:
    if isinstance(node, ast.Constant):
        node.value = value
    else:  # -k
        node.operand.value = -value


def _reference_dims(solution: str, place: _Place, dims: int) -> set:
    """The dims (normalised for ``dims``) the reference's code gives the same call at the
    same slot; for ``X.shape[k]``, of the same ``X`` (a size of another tensor says nothing)."""
    try:
        tree = ast.parse(solution)
    except SyntaxError:
        return set()
    found = set()
    receiver = ast.unparse(place.receiver) if place.call == "shape" and place.receiver is not None else None
    for theirs in _places(tree):
        if theirs.call != place.call or not (theirs.slot == place.slot or place.call == "transpose"):
            continue
        if receiver is not None and (theirs.receiver is None or ast.unparse(theirs.receiver) != receiver):
            continue
        found.add(theirs.value % dims)
    return found


def _meta_tensors(entries) -> dict:
    out = {}
    for entry in entries or []:
        if not isinstance(entry, list) or len(entry) < 4 or not isinstance(entry[0], str):
            continue
        name, shape, dtype = entry[0], entry[1], entry[2]
        if not isinstance(shape, list) or not all(type(s) is int and 0 <= s < 2**40 for s in shape):
            continue
        kind = getattr(torch, str(dtype), None)
        if not isinstance(kind, torch.dtype):
            continue
        out[name] = torch.empty(shape, dtype=kind, device="meta")
    return out


def _statement(tree: ast.AST, line: int) -> ast.stmt | None:
    """The one-line statement at ``line`` with a value (an assignment, a return, an
    expression), or None."""
    for node in ast.walk(tree):
        if (
            isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Expr))
            and node.lineno == line
            and node.end_lineno == line
            and node.value is not None
        ):
            return node
    return None


def _owner(tree: ast.AST, stmt: ast.stmt) -> ast.AST:
    """The innermost function holding ``stmt`` (the module where none does)."""
    holding = [
        node
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.lineno < stmt.lineno <= (node.end_lineno or 0)
    ]
    return max(holding, key=lambda node: node.lineno) if holding else tree


def _earlier_bindings(tree: ast.AST, stmt: ast.stmt, tensors: dict) -> list:
    """(name, statement) for each tensor on the failing line that one earlier one-line
    ``name = ...`` of the same function binds, and nothing else binds there."""
    owner = _owner(tree, stmt)
    params = {a.arg for a in ast.walk(owner) if isinstance(a, ast.arg)} if owner is not tree else set()
    out = []
    for name in tensors:
        if "." in name or name in params:
            continue
        binds = [
            n
            for n in ast.walk(owner)
            if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, (ast.Store, ast.Del))
        ]
        assigns = [
            n
            for n in ast.walk(owner)
            if isinstance(n, ast.Assign)
            and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Name)
            and n.targets[0].id == name
        ]
        if len(binds) == 1 and len(assigns) == 1:
            bound = assigns[0]
            if bound.lineno < stmt.lineno and bound.end_lineno == bound.lineno:
                out.append((name, bound))
    return out


def _fixes(place: _Place, stmt: ast.stmt, failing: ast.stmt, run: _Interpreter, tries: list):
    """Each other dim at ``place`` (in ``stmt``: the failing line, or an earlier one binding a
    name the failing line uses) with which the failing line runs."""
    dims = _receiver_dims(place, run)
    if not dims:
        return dims, set()
    original, working = place.value, set()
    target = stmt.targets[0].id if stmt is not failing else None  # type: ignore[attr-defined]
    for other in range(dims):
        if other == original % dims or tries[0] >= MAX_TRIES:
            continue
        tries[0] += 1
        _set(place.node, other)
        try:
            if target is None:
                runs = run.run(failing.value) is None  # type: ignore[attr-defined]
            else:
                try:
                    value = run.eval(stmt.value)  # type: ignore[attr-defined]
                except _Refused:
                    raise
                except Exception:
                    continue
                again = _Interpreter({**run.tensors, target: value}, run.assumed)
                again.said = run.said
                runs = isinstance(value, torch.Tensor) and again.run(failing.value) is None  # type: ignore[attr-defined]
            if runs:
                working.add(other)
        finally:
            _set(place.node, original)
    return dims, working


def sentence(ctx_data, message: str, code: str, solution: str) -> str | None:
    """The sentence for a shape error at the learner's line (``ctx_data``: errorcause.context),
    or None where the conditions above do not all hold."""
    if not isinstance(ctx_data, dict) or not isinstance(ctx_data.get("line"), int) or not code or not solution:
        return None
    if not SHAPE_ERRORS.search(message or ""):
        return None
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    failing = _statement(tree, ctx_data["line"])
    if failing is None:
        return None
    tensors = _meta_tensors(ctx_data.get("tensors"))
    run = _Interpreter(tensors)
    found = []
    tries = [0]
    try:
        if run.run(failing.value) is None:  # type: ignore[attr-defined]
            assumed = _module_output_assumed(failing.value, tensors, message)  # type: ignore[attr-defined]
            if assumed is None:
                return None  # on these shapes the line runs: its error is not the shapes'
            run = assumed
        statements: list = [failing]
        for name, bound in _earlier_bindings(tree, failing, tensors):
            try:
                value = run.eval(bound.value)
            except Exception:
                continue
            # Worked out from the failing line's tensors, it gives what the name held there.
            if isinstance(value, torch.Tensor) and value.shape == tensors[name].shape:
                statements.append(bound)
        for stmt in statements:
            for place in _places(stmt.value):
                dims, working = _fixes(place, stmt, failing, run, tries)
                reference = _reference_dims(solution, place, dims) if dims else set()
                if place.value % dims in reference if dims else True:
                    continue  # the reference's own dim: the shapes went wrong elsewhere
                found += [(place, other, stmt) for other in working if other in reference]
    except _Refused:
        return None
    if len(found) != 1:
        return None
    place, other, stmt = found[0]
    return _said(place, other, ctx_data["line"], stmt.lineno, run.said)


def _module_output_assumed(value: ast.AST, tensors: dict, message: str) -> _Interpreter | None:
    """Where the line runs only because a call's result is not known (``model(X)``: a
    module, the learner's function): the one call of the line given a tensor of N rows,
    taken to give N rows of K values, for the one K among the error's sizes with which the
    line raises exactly the error it raised; None where there is not exactly one."""
    calls = []
    for node in ast.walk(value):
        if isinstance(node, ast.Call) and node.args and not node.keywords:
            try:
                arg = _Interpreter(tensors).eval(node.args[0])
                result = _Interpreter(tensors).eval(node)
            except Exception:
                continue
            if result is UNKNOWN and isinstance(arg, torch.Tensor) and arg.ndim >= 1:
                calls.append((node, arg))
    if len(calls) != 1:
        return None
    node, arg = calls[0]
    sizes = {int(n) for n in re.findall(r"\((\d{1,7})\)", message)}
    fits = []
    for k in sorted(sizes):
        run = _Interpreter(tensors, {id(node): torch.empty(arg.shape[0], k, device="meta")})
        # Said without the row count: the same for every call that raised (the checks call a function many times).
        run.said = (
            f"{shorten(ast.unparse(node), 40)} giving {k} values for each of its input's rows, as the error's sizes say"
        )
        raised = run.run(value)
        # Meta tensors word a shape error otherwise than the CPU does: the same sizes must be in it.
        if raised is not None and sizes <= {int(n) for n in re.findall(r"\d{1,7}", str(raised))}:
            fits.append(run)
    return fits[0] if len(fits) == 1 else None


def _said(place: _Place, other: int, line: int, at: int, assumed: str) -> str:
    # The shapes are the error's own sentence's (errorcause): said once, however many calls raised.
    change = f"`{shorten(place.text(other), 80)}` in place of `{shorten(place.text(), 80)}`"
    if at != line:
        change += f" at line {at}"
    cause = "a size taken from " if place.call == "shape" else ""
    shapes = f"these same shapes (with {assumed})" if assumed else "these same shapes"
    return f"line {line} runs on {shapes} with {change}: consistent with {cause}the wrong dim there"
