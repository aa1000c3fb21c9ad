"""Lesson text proven like code: ``pack test`` runs the intuition's Python blocks and the
cards' probes in fresh kernels and compares the values the text states with what torch
gives (docs/pack-format.md, "Intuition blocks and card probes").

This process only parses and compares; the code runs in the kernel, sent as source.
"""

from __future__ import annotations

import ast
import io
import json
import math
import re
import tokenize
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tutor.grading.cards import grade
from tutor.grading.mutantrun import display
from tutor.packs import models as m
from tutor.packs.codeblocks import Block
from tutor.packs.problems import Pos

if TYPE_CHECKING:
    from tutor.engine.pool import KernelPool

TIMEOUT = 120.0  # seconds per block or probe: generous, a busy machine starts kernels slowly
STATED = re.compile(r"^#\s*->\s*(?P<value>.*?)(?:\s+#.*)?$")  # "# -> VALUE", an optional "# why" after it
RAISES = re.compile(r"^raises\s+(?P<name>[A-Za-z_][\w.]*)$")
NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![\w])")
REL_TOL = 1e-3  # a stated number matches when it agrees to about 3 significant digits


def where(block: Block, origin: Pos, line_in_block: int = 1) -> str:
    """FILE:LINE of a line of ``block``, in the file the intuition came from."""
    return f"{display(origin.file)}:{origin.line + block.line + line_in_block - 2}"


@dataclass(frozen=True)
class Stated:
    line: int  # in the block, 1-based
    value: str  # the text after "# ->"
    raises: str | None  # "raises NAME": the exception class name


def stated_values(code: str) -> tuple[dict[int, Stated], tuple[int, str] | None]:
    """The ``# -> VALUE`` comments of a block by line, or the line and one sentence on why
    they cannot be read (a syntax error; a value after something that is not a top-level
    expression)."""
    try:
        tree = ast.parse(code)
        comments = [t for t in tokenize.generate_tokens(io.StringIO(code).readline) if t.type == tokenize.COMMENT]
    except (SyntaxError, tokenize.TokenError) as exc:
        return {}, (getattr(exc, "lineno", None) or 1, f"the block is not valid Python ({exc.args[0]})")
    expressions = {s.end_lineno for s in tree.body if isinstance(s, ast.Expr)}
    stated: dict[int, Stated] = {}
    for tok in comments:
        match = STATED.match(tok.string)
        if not match:
            continue
        line = tok.start[0]
        if line not in expressions:
            return {}, (line, "a '# ->' value must end an expression at the block's top level")
        value = match["value"].strip()
        raised = RAISES.match(value)
        stated[line] = Stated(line, value, raised["name"] if raised else None)
    return stated, None


# What every block and probe starts with, so the text need not repeat its imports.
START = "import numpy as np\nimport torch\nimport torch.nn.functional as F\nfrom torch import nn\n"

# Runs in the kernel: the prelude, the earlier blocks (their failures are their own rows),
# then this block statement by statement, keeping the repr and str of each stated line.
_DRIVER = """
def _ptfund_run(prelude, context, code, stated):
    import ast, json, sys, traceback, types
    main = types.ModuleType("__main__")  # a module of its own, so classes the text defines pickle
    sys.modules["__main__"], ns = main, main.__dict__
    def run(src, name, keep):
        for stmt in ast.parse(src).body:
            line = stmt.end_lineno
            try:
                if keep is not None and line in stated:
                    v = eval(compile(ast.Expression(stmt.value), name, "eval"), ns)
                    keep[str(line)] = ["value", repr(v), str(v)]
                else:
                    exec(compile(ast.Module([stmt], []), name, "exec"), ns)
            except Exception as e:
                if keep is None:
                    continue
                if line in stated:
                    keep[str(line)] = ["raises", type(e).__name__, str(e)]
                    continue
                at = [f.lineno for f in traceback.extract_tb(e.__traceback__) if f.filename == name]
                keep["error"] = [at[-1] if at else stmt.lineno, type(e).__name__, str(e)]
                return
    try:  # the same random numbers on every run: a stated value may rest on a random draw
        import random, torch
        random.seed(0)
        torch.manual_seed(0)
    except ImportError:
        pass
    exec(compile(prelude, "<prelude>", "exec"), ns)
    for src in context:
        run(src, "<context>", None)
    out = {}
    run(code, "<intuition>", out)
    return json.dumps(out)
"""

_PROBE = """
def _ptfund_probe(prelude, probe, blanks):
    import json
    ns = {"__name__": "__main__"}
    exec(compile(prelude, "<prelude>", "exec"), ns)
    try:
        v = eval(compile(probe, "<probe>", "eval"), ns)
    except Exception as e:
        return json.dumps(["raises", type(e).__name__, str(e)])
    return json.dumps(["value", [str(x) for x in v] if blanks and isinstance(v, (list, tuple)) else str(v)])
"""


async def _run(pool: KernelPool, source: str) -> tuple[object | None, str]:
    """The driver's JSON answer, or None and one sentence on why the run did not finish."""
    kernel = await pool.take()
    try:
        result = await kernel.execute(source, timeout=TIMEOUT)
    finally:
        pool.give_back(kernel)
    if result.error is not None:
        return None, f"{result.error.ename}: {result.error.evalue}"
    if not result.ok or result.result_text is None:
        return None, result.message or f"the run did not finish ({result.status})"
    return json.loads(ast.literal_eval(result.result_text)), ""


def _compact(text: str) -> str:
    return re.sub(r"\s+", "", text)


def matches(stated: str, shown: str) -> bool:
    """Whether ``shown`` (a repr or str) is what the text states: whitespace is ignored,
    ``...`` stands for any text, and numbers agree to a relative 1e-3."""
    pattern, numbers = "", []
    for k, piece in enumerate(_compact(stated).split("...")):
        if k:
            pattern += ".*?"
        last = 0
        for n in NUMBER.finditer(piece):
            pattern += re.escape(piece[last : n.start()]) + f"({NUMBER.pattern})"
            numbers.append(float(n.group()))
            last = n.end()
        pattern += re.escape(piece[last:])
    found = re.fullmatch(pattern, _compact(shown), flags=re.DOTALL)
    if found is None:
        return False
    got = [float(g) for g in found.groups() if g is not None]
    return len(got) == len(numbers) and all(
        math.isclose(a, b, rel_tol=REL_TOL) for a, b in zip(got, numbers, strict=False)
    )


async def prove_block(
    pool: KernelPool, lesson: m.Lesson, block: Block, before: list[Block], origin: Pos
) -> tuple[bool, str]:
    """Run ``block`` after the prelude and the runnable blocks ``before`` it; (ok, detail)."""
    stated, problem = stated_values(block.code)
    if problem:
        return False, f"{where(block, origin, problem[0])}: {problem[1]}"
    call = f"_ptfund_run({START + lesson.prelude!r}, {[b.code for b in before]!r}, {block.code!r}, {set(stated)!r})"
    out, failure = await _run(pool, _DRIVER + "\n" + call)
    if not isinstance(out, dict):
        return False, f"{where(block, origin)}: {failure}"
    if "error" in out:
        line, name, message = out["error"]
        return False, f"{where(block, origin, line)}: raises {name}: {message}".rstrip(": ")
    for line, want in sorted(stated.items()):
        kind, a, b = out.get(str(line), ["missing", "", ""])
        a = " ".join(a.split())  # one line of output per row
        at = where(block, origin, line)
        if want.raises is not None:
            if kind != "raises" or want.raises.rsplit(".", 1)[-1] != a:
                got = f"gives {a}" if kind == "value" else f"raises {a}"
                return False, f"{at}: the text says it raises {want.raises}; it {got}"
        elif kind == "raises":
            return False, f"{at}: the text says {want.value}; it raises {a}: {b}"
        elif not (matches(want.value, a) or matches(want.value, b)):
            return False, f"{at}: the text says {want.value}; torch gives {a}"
    n = len(stated)
    return True, f"{where(block, origin)}: {n} stated value{'s hold' if n != 1 else ' holds'}"


PROBED = (m.ChoiceCard, m.ClozeCard, m.NumericCard, m.ShortCard)


async def prove_probe(pool: KernelPool, lesson: m.Lesson, card: m.Card) -> tuple[bool, str]:
    """Evaluate the card's probe and grade its value as an answer to the card; (ok, detail)."""
    probe = getattr(card, "probe", None)
    assert probe is not None  # only cards with a probe are proven
    out, problem = await _run(
        pool, _PROBE + f"\n_ptfund_probe({START + lesson.prelude!r}, {probe!r}, {isinstance(card, m.ClozeCard)})"
    )
    if not isinstance(out, list):
        return False, f"probe {probe!r}: {problem}"
    if out[0] == "raises":
        return False, f"probe {probe!r} raises {out[1]}: {out[2]}"
    answer = out[1]
    g = grade(card, answer)
    if g.correct:
        return True, f"probe gives {answer!r}, as the key says"
    return False, f"probe {probe!r} gives {answer!r}; the card's key is {g.expected!r}"
