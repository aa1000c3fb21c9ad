"""python checks: the escape hatch. Statements (usually asserts) run against the learner's
namespace, with the reference namespace as ``ref``.

Asserts are rewritten before they run, as pytest's assertion rewriting does: the operands
of a comparison (or the arguments of a call such as ``torch.allclose(a, b)``) are computed
once into temporaries, so when the assert fails the learner is told which one failed and
the value on each side. Only the failing assert's own expression is shown, never the rest
of the block, and never when it names setup's private (``_``) helpers.
"""

import ast
import traceback
import types

from ..context import Context, Outcome, private_names
from ..describe import short_repr
from ..namespaces import CHECK, compile_code, own_frames, register_source, seed_all

SEEN = "__ptfund_seen"  # line -> [(source, value), ...] of the assert on that line


class _Rewriter(ast.NodeTransformer):
    def __init__(self):
        self.count = 0

    def _temp(self, value: ast.expr, node: ast.stmt, out: list) -> ast.Name:
        self.count += 1
        name = f"__ptfund_v{self.count}"
        out.append(ast.copy_location(ast.Assign(targets=[ast.Name(name, ast.Store())], value=value), node))
        return ast.Name(name, ast.Load())

    def visit_Assert(self, node: ast.Assert):
        test = node.test
        parts: list = []  # (source, temporary)
        pre: list = []
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            left = self._temp(test.left, node, pre)
            right = self._temp(test.comparators[0], node, pre)
            parts = [(ast.unparse(test.left), left), (ast.unparse(test.comparators[0]), right)]
            test = ast.Compare(left=left, ops=test.ops, comparators=[right])
        elif isinstance(test, ast.Call) and test.args and not any(isinstance(a, ast.Starred) for a in test.args):
            args: list[ast.expr] = [self._temp(a, node, pre) for a in test.args]
            parts = [(ast.unparse(a), t) for a, t in zip(test.args, args, strict=True)]
            test = ast.Call(func=test.func, args=args, keywords=test.keywords)
        elif isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inner = self._temp(test.operand, node, pre)
            parts = [(ast.unparse(test.operand), inner)]
            test = ast.UnaryOp(op=ast.Not(), operand=inner)
        else:
            value = self._temp(test, node, pre)
            parts = [(ast.unparse(test), value)]
            test = value
        record = ast.Assign(
            targets=[ast.Subscript(ast.Name(SEEN, ast.Load()), ast.Constant(node.lineno), ast.Store())],
            value=ast.List(
                elts=[ast.Tuple([ast.Constant(src), tmp], ast.Load()) for src, tmp in parts], ctx=ast.Load()
            ),
        )
        pre.append(ast.copy_location(record, node))
        pre.append(ast.copy_location(ast.Assert(test=test, msg=node.msg), node))
        return pre


def rewrite(source: str):
    """(code object, {line: assert source}); asserts that cannot be rewritten run as written."""
    tree = ast.parse(source, CHECK, "exec")
    asserts = {n.lineno: ast.unparse(n.test) for n in ast.walk(tree) if isinstance(n, ast.Assert)}
    tree = ast.fix_missing_locations(_Rewriter().visit(tree))
    return compile(tree, CHECK, "exec", dont_inherit=True), asserts


def _check_line(exc: BaseException) -> int | None:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == CHECK]
    return frames[-1].lineno if frames else None


def explain_assert(exc: AssertionError, asserts: dict, seen: dict) -> str:
    """'t.sum() == ref.t.sum() failed: t.sum() is tensor(0.), ref.t.sum() is tensor(3.)'."""
    own = str(exc).strip()
    line = _check_line(exc)
    values = seen.get(line) or []
    source = asserts.get(line)
    if source is None:
        return own
    hidden = private_names(source)
    shown = [(src, v) for src, v in values if not private_names(src)]
    sides = "; ".join(f"{src} is {short_repr(v, 120)}" for src, v in shown if src.strip() != short_repr(v, 120))
    if hidden:
        sentence = "an assertion of the check failed" + (f" ({sides})" if sides else "")
    else:
        sentence = f"{source} failed" + (f": {sides}" if sides else "")
    return f"{own} ({sentence})" if own else sentence


def check_python(check: dict, ctx: Context) -> Outcome:
    ref = types.SimpleNamespace(**{k: v for k, v in ctx.ref.items() if not k.startswith("__")})
    source = check["code"]
    try:
        code, asserts = rewrite(source)
    except SyntaxError:  # run as written: the same SyntaxError reaches the learner as before
        code, asserts = compile_code(source, CHECK, "exec"), {}
    register_source(CHECK, source)
    seen: dict = {}
    scope = ctx.scope(ctx.learner, {"ref": ref, SEEN: seen})
    seed_all(ctx.seed)
    try:
        with ctx.side("learner"):
            exec(code, scope)
    except AssertionError as exc:
        # The runner puts the authored message first; the failing assert and its values follow.
        if own_frames(exc):  # raised inside the learner's own function, not by the check's assert
            return Outcome(False, ctx.explain(exc, source, shown=False))
        return Outcome(False, explain_assert(exc, asserts, seen))
    except Exception as exc:
        return Outcome(False, ctx.explain(exc, source, shown=False), details={"raised": type(exc).__name__})
    label = check.get("label") or check.get("id") or "check"
    return Outcome(True, f"✓ {label} passed")
