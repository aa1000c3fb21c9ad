"""Setup helpers that compute what a check compares with, where the learner's code can call them.

A check's `expected` runs in the judge, but a helper it calls that the exercise's setup (or
its lesson's prelude) defines runs in the learner's kernel as well: code that calls it gets
the answer without solving the exercise. Such a helper belongs in the exercise's
`judge_setup`, which only the judge runs (docs/trust.md). `pack validate` warns about each.
"""

from __future__ import annotations

import ast

from tutor.packs.loader import LESSON_FILE, Pack
from tutor.packs.problems import Problem, field_path


def _public_defs(code: str) -> set[str]:
    """The public functions and classes ``code`` defines at its top level."""
    try:
        tree = ast.parse(code or "")
    except (SyntaxError, ValueError):
        return set()
    return {
        node.name
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not node.name.startswith("_")
    }


def _called(expr: str) -> list[str]:
    try:
        tree = ast.parse(expr, mode="eval")
    except (SyntaxError, ValueError):
        return []
    return [node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)]


def exposed_oracles(pack: Pack) -> list[Problem]:
    """A warning at each check's `expected` that calls a public helper of the setup or prelude
    that the exercise's judge_setup does not define in its place."""
    from tutor.packs.yamlsrc import YamlSyntaxError, load_located

    out = []
    for lesson in pack.lessons:
        prelude = _public_defs(getattr(lesson, "prelude", "") or "")
        found = []
        for i, ex in enumerate(lesson.exercises):
            shared = (prelude | _public_defs(ex.setup or "")) - _public_defs(ex.judge_setup or "")
            for c, check in enumerate(ex.checks):
                expected, expr = getattr(check, "expected", None), getattr(check, "expr", None)
                if not isinstance(expected, str):
                    continue
                # a helper the check also applies to the learner's value (flat(eager) against
                # flat(eager_grads())) is a transformation, not the answer
                learner_side = set(_called(expr)) if isinstance(expr, str) else set()
                names = [n for n in dict.fromkeys(_called(expected)) if n in shared and n not in learner_side]
                if names:
                    found.append((("exercises", i, "checks", c, "expected"), names[0]))
        if not found:
            continue
        file = pack.root / lesson.id / LESSON_FILE
        try:  # positions only: the lesson loaded already
            located = load_located(file.read_text(encoding="utf-8"), file)
        except (OSError, UnicodeDecodeError, YamlSyntaxError):
            located = None
        for path, name in found:
            line, col = located.pos(path) if located is not None else (1, 1)
            out.append(
                Problem(
                    str(file),
                    line,
                    col,
                    field_path(path),
                    f"expected calls {name}, which the setup defines: the learner's kernel runs the setup too, "
                    f"so the learner's code can call {name} for the answer; define it in the exercise's "
                    "judge_setup, which only the judge runs",
                )
            )
    return out
