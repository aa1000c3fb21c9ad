"""Authored mistakes whose condition any failure satisfies (or a failure of any of several
properties one check compares): their message would be said for bugs it is not about, as if
it were their cause. ``pack validate`` warns about each, at the
condition's FILE:LINE:COL. Static: nothing runs (a condition is read, not evaluated)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import TYPE_CHECKING

from tutor.packs.problems import Problem, field_path

if TYPE_CHECKING:
    from tutor.packs import models as m
    from tutor.packs.loader import Pack

_FIX = "give a `when` that holds only for the bug the message names (a value only that bug produces)"


def _tree(source: str) -> ast.expr | None:
    try:
        return ast.parse(source, mode="eval").body
    except (SyntaxError, ValueError):
        return None


def _same(a: ast.AST, b: ast.AST) -> bool:
    return ast.dump(a) == ast.dump(b)


def _failing_forms(expr: ast.expr, expected: ast.expr | None) -> list[ast.expr]:
    """Conditions that say no more than "this check failed": the check's expression unequal to
    its authored expected value (or, for an expected True or False, the expression's falsity
    or truth)."""
    if expected is None:
        return []
    forms: list[ast.expr] = [
        ast.Compare(expr, [ast.NotEq()], [expected]),
        ast.Compare(expected, [ast.NotEq()], [expr]),
        ast.UnaryOp(ast.Not(), ast.Compare(expr, [ast.Eq()], [expected])),
        ast.Compare(expr, [ast.IsNot()], [expected]),
    ]
    if isinstance(expected, ast.Constant) and isinstance(expected.value, bool):
        # (`x is False` is narrower than a failure of "x is True": x may be None)
        forms.append(ast.UnaryOp(ast.Not(), expr) if expected.value else expr)
        if not expected.value:
            forms.append(ast.Call(ast.Name("bool", ast.Load()), [expr], []))
    return forms


def _broad_when(when: str, ex: m.Exercise) -> str | None:
    tree = _tree(when)
    if tree is None:
        return None
    if isinstance(tree, ast.Constant) and tree.value:
        return f"this `when` is always true, so every failure gets this mistake's message; {_FIX}"
    # `a or b` is as broad as its broadest side. Restating one check's failure where there
    # are others is as narrow as that check (and narrower than failed_check: false when the
    # check raised); restating the only check's, every failure of the exercise satisfies.
    parts = tree.values if isinstance(tree, ast.BoolOp) and isinstance(tree.op, ast.Or) else [tree]
    for i, check in enumerate(ex.checks[:1] if len(ex.checks) == 1 else []):
        source = getattr(check, "expr", None)
        expected = getattr(check, "expected", None)
        expr = _tree(source) if isinstance(source, str) else None
        if expr is None:
            continue
        wanted = _tree(expected) if isinstance(expected, str) else None
        if any(_same(part, form) for part in parts for form in _failing_forms(expr, wanted)):
            name = check.id or f"check {i + 1}"
            return (
                f"this `when` holds whenever check {name}, the exercise's only check, fails by its value, whatever "
                f"the cause, so every such failure gets this mistake's message; {_FIX}"
            )
    return None


def _why(mistake: m.Mistake, ex: m.Exercise) -> tuple[str, str] | None:
    """(field, sentence) when ``mistake`` fires on any failure."""
    if mistake.failed_check is not None:
        if len(ex.checks) == 1 and ex.checks[0].id == mistake.failed_check:
            return "failed_check", (
                f"failed_check names {mistake.failed_check}, the exercise's only check, so every failure gets this "
                f"mistake's message; {_FIX}"
            )
        # A check that compares several properties fails for as many causes: a message is about one.
        check = next((c for c in ex.checks if c.id == mistake.failed_check), None)
        compared = list(getattr(check, "compare", None) or [])
        if len(compared) > 1:
            return "failed_check", (
                f"failed_check names {mistake.failed_check}, which compares {', '.join(compared[:-1])} and "
                f"{compared[-1]}, so a failure of any of them gets this mistake's message, whatever its cause; {_FIX}"
            )
        return None
    if mistake.when is not None:
        why = _broad_when(mistake.when, ex)
        return ("when", why) if why else None
    return None


def broad_mistakes(pack: Pack) -> list[Problem]:
    """A warning for every authored mistake that any failure of its exercise satisfies (an
    always-true `when`, or one that restates the failure of the only check, or failed_check
    naming it), at the condition in its lesson.yaml."""
    from tutor.packs.loader import LESSON_FILE
    from tutor.packs.yamlsrc import YamlSyntaxError, load_located

    out = []
    for lesson in pack.lessons:
        found = [
            ((i, k, *why), ex)
            for i, ex in enumerate(lesson.exercises)
            for k, mistake in enumerate(ex.mistakes)
            if (why := _why(mistake, ex))
        ]
        if not found:
            continue
        file = pack.root / lesson.id / LESSON_FILE
        try:  # positions only: the lesson loaded already, so this reads what was validated
            located = load_located(file.read_text(encoding="utf-8"), file)
        except (OSError, UnicodeDecodeError, YamlSyntaxError):
            located = None
        for (i, k, key, sentence), _ in found:
            path = ("exercises", i, "mistakes", k, key)
            line, col = located.pos(path) if located is not None else (1, 1)
            if located is not None and path in located.block:
                line, col = line + 1, 1
            out.append(Problem(_display(file), line, col, field_path(path), sentence))
    return out


def _display(file: Path) -> str:
    # as pack validate's problems show a file: relative to where the command runs, if inside it
    try:
        return str(file.relative_to(Path.cwd()))
    except ValueError:
        return str(file)
