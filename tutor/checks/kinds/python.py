"""python checks: the escape hatch. Statements (usually asserts) run against the learner's
namespace, with the reference namespace as ``ref``.

Asserts are rewritten before they run, as pytest's assertion rewriting does (explain.py):
when one fails the learner is told which one and the value of each of its operands and
names. Only the failing assert's own expression is shown, never the rest of the block, and
never when it names setup's private (``_``) helpers. A failing line leads with the check's
``label``, as a passing one does.
"""

import ast
import functools
import traceback
import types

from ..context import Context, Outcome, private_names, raised_text
from ..explain import SEEN, WITNESS, Condition, witness
from ..namespaces import CHECK, compile_code, own_frames, register_source, seed_all


class _Rewriter(ast.NodeTransformer):
    def __init__(self, source: str):
        self.source = source
        self.counter = [0]
        self.conditions: dict = {}  # line -> Condition of the assert on that line

    def visit_Assert(self, node: ast.Assert):
        condition = Condition(node.test, node.lineno, self.counter, self.source)
        self.conditions[node.lineno] = condition
        reset = ast.Assign(
            targets=[ast.Subscript(ast.Name(SEEN, ast.Load()), ast.Constant(node.lineno), ast.Store())],
            value=ast.Dict(keys=[], values=[]),
        )
        check = ast.Assert(test=condition.result, msg=node.msg)
        return [ast.copy_location(reset, node), *condition.statements, ast.copy_location(check, node)]


@functools.lru_cache(maxsize=64)
def rewrite(source: str):
    """(code object, {line: Condition}); asserts that cannot be rewritten run as written.
    Kept per source (neither is changed once made): a check runs again in every world and
    in the device run, and a judge kept for a batch checks the same exercise again."""
    tree = ast.parse(source, CHECK, "exec")
    rewriter = _Rewriter(source)
    tree = ast.fix_missing_locations(rewriter.visit(tree))
    return compile(tree, CHECK, "exec", dont_inherit=True), rewriter.conditions


def _check_line(exc: BaseException) -> int | None:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == CHECK]
    return frames[-1].lineno if frames else None


def explain_assert(exc: AssertionError, conditions: dict, seen: dict, scope: dict | None = None) -> str:
    """'t.sum() == ref.t.sum() failed: t.sum() is tensor(0.); ref.t.sum() is tensor(3.)'."""
    own = str(exc).strip()
    condition = conditions.get(_check_line(exc))
    if condition is None:
        return own
    sides = condition.sides(seen, scope or {}, hidden=lambda src: bool(private_names(src)))
    if not condition.parts and own:
        return own  # `assert False, "..."`: the author's sentence is the whole story
    if private_names(condition.source):
        sentence = "an assertion of the check failed" + (f" ({sides})" if sides else "")
    else:
        sentence = f"{condition.source} failed" + (f": {sides}" if sides else "")
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
    scope = ctx.learner_scope({"ref": ref, SEEN: seen, WITNESS: witness})
    seed_all(ctx.seed)
    try:
        with ctx.side("learner"):
            exec(code, scope)
    except AssertionError as exc:
        # The runner puts the authored message first; the failing assert and its values follow.
        if own_frames(exc):  # raised inside the learner's own function, not by the check's assert
            return Outcome(False, ctx.explain(exc, source, shown=False))
        return Outcome(False, _labelled(ctx, explain_assert(exc, asserts, seen, scope)))
    except Exception as exc:
        details = {"raised": type(exc).__name__, "raised_text": raised_text(exc)}
        return Outcome(False, ctx.explain(exc, source, shown=False), details=details)
    label = check.get("label") or check.get("id") or "check"
    return Outcome(True, f"✓ {label} passed")


def _labelled(ctx: Context, sentence: str) -> str:
    """A failing line names the check by its label, as a passing one does."""
    return f"{ctx.label}: {sentence}" if ctx.label else sentence
