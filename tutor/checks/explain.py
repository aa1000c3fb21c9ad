"""Why a condition was false, said the way pytest's assertion rewriting says it.

A condition (an assert's test, a function check's ``property``) is rewritten before it
runs: its operands are computed once into temporaries (the sides of a comparison, the
arguments of a call such as ``torch.allclose(a, b)``, the operands of ``and``/``or`` in
their short-circuit order), so when it is false the learner is told each operand's value
and the value of each plain name in it (``f(x) == g(x) failed: f(x) is ...; g(x) is ...;
x is ...``). ``all(... for v in xs)`` is told by its first failing item, never by a
generator's repr; values whose repr is an object address are left out.
"""

import ast
import builtins
import functools
import re

from . import origin
from .compare import relation
from .describe import short_repr

TEMP = "__ptfund_v"
SEEN = "__ptfund_seen"  # key -> {operand index: value} of the condition being tested
WITNESS = "__ptfund_witness"
RESULT = "__ptfund_result"
_OBJECT_REPR = re.compile(r"<[^<>]* at 0x[0-9a-fA-F]+>")
_FIRST = "<the first item that fails>"  # the part that holds all(...)'s witness
_NOT_SHOWN = frozenset(dir(builtins)) | {"torch", "np", "nn", "F", "math", "ref", "DEVICE"}


# Lines as the parser counts them (\n, \r\n or \r ends one): ast.get_source_segment's split.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


@functools.lru_cache(maxsize=64)
def _lines(text: str) -> tuple[bytes, ...]:
    return tuple(line.encode() for line in _LINE.findall(text))


def _segment(text: str, node: ast.AST) -> str | None:
    """``ast.get_source_segment(text, node)``, splitting ``text`` once for all its nodes
    (the standard one splits it again for each: most of a condition's rewriting time)."""
    try:
        first, last = node.lineno - 1, node.end_lineno - 1  # type: ignore[attr-defined]
        start, end = node.col_offset, node.end_col_offset  # type: ignore[attr-defined]
    except AttributeError:
        return None
    lines = _lines(text)
    if last is None or end is None or not 0 <= first <= last < len(lines):
        return None
    if first == last:
        return lines[first][start:end].decode()
    return b"".join([lines[first][start:], *lines[first + 1 : last], lines[last][:end]]).decode()


def witness(pairs):
    """(all true, the first false item's loop values) over (values, item) pairs."""
    for values, item in pairs:
        if not item:
            return False, values
    return True, None


class Condition:
    """One rewritten condition: the statements that compute it into ``result`` (a
    temporary) and record each operand's value under ``key`` in SEEN."""

    def __init__(self, test: ast.expr, key, counter: list, text: str | None = None):
        self.key = key
        self.counter = counter
        self.text = text  # the source the tree was parsed from: operands are quoted as written
        self.source = self._source(test)
        self.parts: list = []  # (source, index): index into SEEN[key]
        self.statements: list = []
        self.names = _free_names(test)
        self.loop_targets: list = []  # the for-targets of all(... for ...), to name its failing item
        self.pair: tuple[int, int] | None = None  # the parts of allclose(a, b) and the like
        self.result = self._split(test, self.statements, depth=0)

    def _source(self, node: ast.expr) -> str:
        written = _segment(self.text, node) if self.text is not None else None
        return " ".join(written.split()) if written else ast.unparse(node)

    def _record(self, value: ast.expr, source: str, out: list, anchor: ast.AST) -> ast.Name:
        self.counter[0] += 1
        name = f"{TEMP}{self.counter[0]}"
        index = len(self.parts)
        self.parts.append((source, index))
        store = ast.Assign(targets=[ast.Name(name, ast.Store())], value=value)
        seen = ast.Subscript(ast.Name(SEEN, ast.Load()), ast.Constant(self.key), ast.Load())
        note = ast.Assign(
            targets=[ast.Subscript(seen, ast.Constant(index), ast.Store())], value=ast.Name(name, ast.Load())
        )
        out.extend(ast.copy_location(s, anchor) for s in (store, note))
        return ast.Name(name, ast.Load())

    def _split(self, test: ast.expr, out: list, depth: int) -> ast.expr:
        """Statements into ``out`` computing the operands of ``test``; returns ``test`` over them."""
        if isinstance(test, ast.Compare):
            operands = [test.left, *test.comparators]
            temps: list[ast.expr] = [self._record(o, self._source(o), out, test) for o in operands]
            return ast.Compare(left=temps[0], ops=test.ops, comparators=temps[1:])
        if isinstance(test, ast.BoolOp) and depth < 2:
            # Short-circuit kept: an operand runs only if the ones before it did not decide.
            self.counter[0] += 1
            acc = f"{TEMP}{self.counter[0]}"
            body = out
            for k, operand in enumerate(test.values):
                value = self._split(operand, body, depth + 1)
                body.append(ast.copy_location(ast.Assign(targets=[ast.Name(acc, ast.Store())], value=value), test))
                if k < len(test.values) - 1:
                    cond: ast.expr = ast.Name(acc, ast.Load())
                    if isinstance(test.op, ast.Or):
                        cond = ast.UnaryOp(op=ast.Not(), operand=cond)
                    branch = ast.copy_location(ast.If(test=cond, body=[], orelse=[]), test)
                    body.append(branch)
                    body = branch.body
            return ast.Name(acc, ast.Load())
        if isinstance(test, ast.Call) and _is_all_of_generator(test):
            gen = test.args[0]
            assert isinstance(gen, ast.GeneratorExp)
            loop_values = ast.Tuple([_as_load(g.target) for g in gen.generators], ast.Load())
            pairs = ast.GeneratorExp(elt=ast.Tuple([loop_values, gen.elt], ast.Load()), generators=gen.generators)
            call = ast.Call(func=ast.Name(WITNESS, ast.Load()), args=[pairs], keywords=[])
            self.loop_targets = [g.target for g in gen.generators]
            found = self._record(call, _FIRST, out, test)
            return ast.Subscript(found, ast.Constant(0), ast.Load())
        if isinstance(test, ast.Call) and test.args and not any(isinstance(a, ast.Starred) for a in test.args):
            first = len(self.parts)
            args = [a if _unshowable(a) else self._record(a, self._source(a), out, test) for a in test.args]
            if depth == 0 and _compares_two(test):
                self.pair = (first, first + 1)
            return ast.Call(func=test.func, args=args, keywords=test.keywords)
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return ast.UnaryOp(op=ast.Not(), operand=self._split(test.operand, out, depth + 1))
        if depth == 0 and isinstance(test, ast.Constant):
            return test  # `assert False, msg`: the message says it all
        return self._record(test, self._source(test), out, test)

    def sides(self, seen: dict, scope: dict, hidden=lambda src: False) -> str:
        """'a is 1; b is 2' for the operands that ran and the plain names in the condition."""
        values = seen.get(self.key) or {}
        shown: list = []  # (source, value, template)
        for source, index in self.parts:
            if index not in values:
                continue  # not evaluated: an earlier operand decided
            value = values[index]
            if source == _FIRST:
                if isinstance(value, tuple) and len(value) == 2 and value[0] is False:
                    bound = [pair for t, v in zip(self.loop_targets, value[1], strict=False) for pair in _bind(t, v)]
                    item = ", ".join(f"{name} = {short_repr(v, 60)}" for name, v in bound if not hidden(name))
                    if item and not _OBJECT_REPR.search(item):
                        shown.append(("", None, f"the first item that fails has {item}"))
                continue
            shown.append((source, value, "{source} is {text}"))
        quoted = {source for source, _, _ in shown}
        for name in self.names:
            if name not in quoted and name in scope and not callable(scope[name]):
                shown.append((name, scope[name], "{source} is {text}"))
        texts = []
        for source, value, template in shown:
            if not source:
                texts.append(template)
                continue
            text = short_repr(value, 120)
            if hidden(source) or _OBJECT_REPR.search(text) or text == source.strip():
                continue
            texts.append(template.format(source=source, text=text))
        cause = self._pair_cause(values, hidden)
        return "; ".join(texts + ([cause] if cause else []))

    def _pair_cause(self, values: dict, hidden) -> str | None:
        """For ``allclose(a, b)`` and the like, where exactly one of a and b is what the
        learner's code returned (origin.py) and the other is what it is compared with: how
        the one is the other transformed (a ReLU where none belongs, a sign, a factor...)."""
        if self.pair is None:
            return None
        (mine_src, i), (theirs_src, j) = self.parts[self.pair[0]], self.parts[self.pair[1]]
        if i not in values or j not in values:
            return None
        mine, theirs = values[i], values[j]
        if origin.received(mine) == origin.received(theirs):
            return None  # both or neither the learner's: neither side is the expected one
        if origin.received(theirs):
            mine_src, mine, theirs_src, theirs = theirs_src, theirs, mine_src, mine
        if hidden(mine_src) or hidden(theirs_src):
            return None
        found = relation(mine_src, mine, theirs)
        if not found or theirs_src == "expected":
            return found
        return f"taking {theirs_src} as the expected value, {found}"


def _bind(target: ast.expr, value) -> list:
    """(name, value) pairs of a for-target bound to ``value``: `a, b` and (5, 3) give a = 5, b = 3."""
    if isinstance(target, ast.Name):
        return [(target.id, value)]
    if (
        isinstance(target, (ast.Tuple, ast.List))
        and isinstance(value, (tuple, list))
        and len(value) == len(target.elts)
    ):
        return [pair for t, v in zip(target.elts, value, strict=True) for pair in _bind(t, v)]
    return [(ast.unparse(target), value)]


def _as_load(target: ast.expr) -> ast.expr:
    if isinstance(target, ast.Name):
        return ast.Name(target.id, ast.Load())
    if isinstance(target, (ast.Tuple, ast.List)):
        return ast.Tuple([_as_load(e) for e in target.elts], ast.Load())
    if isinstance(target, ast.Starred):
        return _as_load(target.value)
    return ast.Constant(None)  # an attribute or subscript target: nothing to show


def _is_all_of_generator(call: ast.Call) -> bool:
    return (
        isinstance(call.func, ast.Name)
        and call.func.id == "all"
        and len(call.args) == 1
        and not call.keywords
        and isinstance(call.args[0], ast.GeneratorExp)
    )


# Calls that hold when their first two arguments are alike (a check's own comparison).
_COMPARING = frozenset({"allclose", "isclose", "equal", "array_equal", "array_equiv"})


def _compares_two(call: ast.Call) -> bool:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    return name in _COMPARING and len(call.args) >= 2 and not any(_unshowable(a) for a in call.args[:2])


def _unshowable(node: ast.expr) -> bool:
    """Arguments whose value reads as an object, not data: left inline, never shown."""
    return isinstance(node, (ast.GeneratorExp, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp))


def _free_names(test: ast.expr) -> list:
    """The plain names a condition reads that the learner would recognise: not builtins,
    modules, setup's ``_`` helpers, or names bound inside it (comprehension variables)."""
    bound = {
        n.id
        for node in ast.walk(test)
        if isinstance(node, (ast.comprehension, ast.Lambda))
        for n in ast.walk(node.target if isinstance(node, ast.comprehension) else node.args)
        if isinstance(n, ast.Name)
    }
    bound |= {a.arg for node in ast.walk(test) if isinstance(node, ast.Lambda) for a in node.args.args}
    out: list = []
    for node in ast.walk(test):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            name = node.id
            if name in _NOT_SHOWN or name in bound or name.startswith("_") or name in out:
                continue
            out.append(name)
    return out


@functools.lru_cache(maxsize=64)
def _compiled(source: str):
    """The condition of ``source`` and the code computing it into RESULT (a function check
    evaluates its property once per case: parsed once)."""
    text = source.strip()
    test = ast.parse(text, "<check>", "eval").body
    condition = Condition(test, 0, [0], text)
    statements = [*condition.statements, ast.Assign(targets=[ast.Name(RESULT, ast.Store())], value=condition.result)]
    module = ast.fix_missing_locations(ast.Module(body=statements, type_ignores=[]))
    return condition, compile(module, "<check>", "exec", dont_inherit=True)


def evaluate(source: str, scope: dict, hidden=lambda src: False) -> tuple[object, str]:
    """Evaluate the expression ``source`` in ``scope`` (modified: temporaries land there);
    returns its value and, for a false value, the sides as :meth:`Condition.sides` says them
    (leaving out the operands ``hidden`` says)."""
    condition, code = _compiled(source)
    seen: dict = {0: {}}
    scope[SEEN], scope[WITNESS] = seen, witness
    exec(code, scope)
    value = scope[RESULT]
    return value, ("" if value else condition.sides(seen, scope, hidden))
