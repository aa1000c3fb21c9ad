"""Checks beyond the models: ids, references, Markdown and code that parses. Executes nothing."""

from __future__ import annotations

import ast
import builtins
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tutor.checks import setupnames, vocabulary
from tutor.packs import models as m
from tutor.packs.problems import UNREADABLE, Pos, Problem, field_path

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from tutor.packs.loader import _Reporter

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})", re.MULTILINE)
_HEADING = re.compile(r"^ {0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def validate_manifest(manifest: m.PackManifest, root: Path, rep: _Reporter) -> None:
    seen: set[str] = set()
    for i, lesson_id in enumerate(manifest.lessons):
        path = ("lessons", i)
        if lesson_id in seen:
            rep.at(path, f"lesson {lesson_id!r} is listed twice")
        seen.add(lesson_id)
        folder = root / lesson_id
        if not folder.is_dir():
            rep.at(path, f"no lesson folder {lesson_id}/ beside pack.yaml")
        elif not (folder / "lesson.yaml").is_file():
            rep.at(path, f"{lesson_id}/lesson.yaml not found")


def unlisted_lessons(manifest: m.PackManifest, root: Path, rep: _Reporter) -> None:
    """A lesson folder the list leaves out is never loaded: almost always a forgotten line."""
    listed = set(manifest.lessons)
    try:
        folders = sorted(p for p in root.iterdir() if p.is_dir() and (p / "lesson.yaml").is_file())
    except OSError:
        return
    for folder in folders:
        if folder.name not in listed:
            rep.at(
                ("lessons",),
                f"the lesson folder {folder.name}/ is not in this list, so it is never loaded "
                "(add it, or move the folder out of the pack)",
                key=True,
            )


def headings(markdown: str) -> list[str]:
    body = _strip_fenced(markdown)
    return [h.strip() for h in _HEADING.findall(body)]


def _strip_fenced(markdown: str) -> str:
    out, fence = [], None
    for line in markdown.splitlines():
        mfence = _FENCE.match(line)
        if mfence:
            marker = mfence.group(1)
            if fence is None:
                fence = marker[0] * 3
            elif marker.startswith(fence):
                fence = None
            continue
        if fence is None:
            out.append(line)
    return "\n".join(out)


def _check_markdown(text: str, origin: Pos, path: tuple, rep: _Reporter) -> None:
    if not text.strip():
        rep.at(path, "is empty")
        return
    open_at, fence = 0, None
    for n, line in enumerate(text.splitlines()):
        mfence = _FENCE.match(line)
        if not mfence:
            continue
        marker = mfence.group(1)
        if fence is None:
            fence, open_at = marker[0] * 3, n
        elif marker.startswith(fence) and not line.strip()[len(marker) :].strip():
            fence = None
    if fence is not None:
        rep.at(
            path,
            "code fence opened here is never closed (add a line with ```)",
            line=origin.line + open_at,
            col=1,
            file=origin.file,
        )


def _check_code(code: str, origin: Pos, path: tuple, rep: _Reporter, *, what: str = "code", mode: str = "exec") -> None:
    if mode == "exec" and not code.strip():
        return
    try:
        ast.parse(code, mode=mode)
    except SyntaxError as exc:
        lineno = exc.lineno or 1
        line = origin.line + lineno - 1
        col = (exc.offset or 1) + (origin.col - 1 if lineno == 1 else 0)
        detail = exc.msg
        if mode == "eval":
            detail = f"not a Python expression ({exc.msg})"
        rep.at(path, f"{what} does not parse: {detail}", line=line, col=col, file=origin.file)


class _Where:
    """Where a lesson's values stand, for its problems: a field where its text came from
    (``field``: a file it names, else the YAML), an expression where its text starts
    (``expr``: the line after a block scalar's indicator)."""

    def __init__(self, origins: dict[tuple, Pos], rep: _Reporter) -> None:
        self.origins = origins
        self.rep = rep

    def field(self, *path: str | int) -> Pos:
        key = tuple(path)
        while key not in self.origins and key:
            key = key[:-1]
        if key in self.origins:
            return self.origins[key]
        line, col = self.rep.located.pos(tuple(path)) if self.rep.located else (1, 1)
        return Pos(self.rep.file, line, col)

    def expr(self, *path: str | int) -> Pos:
        located = self.rep.located
        assert located is not None  # a lesson is validated only after its YAML parsed
        line, col = located.pos(tuple(path))
        if tuple(path) in located.block:
            return Pos(self.rep.file, line + 1, 1)
        # a plain scalar: columns count from where the value starts
        return Pos(self.rep.file, line, col)


def validate_lesson(
    lesson: m.Lesson, folder_id: str, origins: dict[tuple, Pos], rep: _Reporter, earlier: Sequence[Problem] = ()
) -> None:
    """What the schema cannot say about a lesson: ids unique and matching, code and Markdown
    that parse, names the checks use defined, references that resolve."""
    where = _Where(origins, rep)
    if lesson.id != folder_id:
        rep.at(("id",), f"lesson id {lesson.id!r} differs from its folder name {folder_id!r}")
    _check_markdown(lesson.intuition, where.field("intuition"), ("intuition",), rep)
    _check_code(getattr(lesson, "prelude", ""), where.field("prelude"), ("prelude",), rep, what="prelude")
    sections = {h.casefold() for h in headings(lesson.intuition)}

    item_ids: dict[str, tuple] = {}
    for i, ex in enumerate(lesson.exercises):
        if ex is None:  # it failed the schema (reported): its siblings are still checked
            continue
        base = ("exercises", i)
        if ex.id in item_ids:
            rep.at((*base, "id"), f"id {ex.id!r} is used twice in this lesson")
        item_ids[ex.id] = base
        _validate_exercise(ex, base, where, rep, earlier)

    for i, card in enumerate(lesson.cards):
        if card is None:
            continue
        base = ("cards", i)
        if card.id in item_ids:
            rep.at(
                (*base, "id"), f"id {card.id!r} is used twice in this lesson (exercise and card ids share one space)"
            )
        item_ids[card.id] = base
        _validate_card(card, base, where, rep, lesson, sections)


def _validate_exercise(ex: m.Exercise, base: tuple, where: _Where, rep: _Reporter, earlier: Sequence[Problem]) -> None:
    _check_markdown(ex.prompt, where.field(*base, "prompt"), (*base, "prompt"), rep)
    for h, hint in enumerate(ex.hints):
        _check_markdown(hint, where.field(*base, "hints", h), (*base, "hints", h), rep)
    for name in ("setup", "judge_setup", "starter", "solution"):
        _check_code(getattr(ex, name), where.field(*base, name), (*base, name), rep, what=name)
    # A setup or solution file that could not be read stands in as `pass`: nothing to resolve against.
    unreadable = {p.field for p in [*earlier, *rep.problems]} & {
        field_path((*base, k)) for k in ("setup", "judge_setup", "solution")
    }
    known = None if unreadable else _known_names(ex)
    check_ids: set[str] = set()
    for c, check in enumerate(ex.checks):
        cpath = (*base, "checks", c)
        if check.id:
            if check.id in check_ids:
                rep.at((*cpath, "id"), f"check id {check.id!r} is used twice in this exercise")
            check_ids.add(check.id)
        _validate_check(check, cpath, where.field, where.expr, rep)
        if known is not None:
            for name in _EXPR_FIELDS:
                value = getattr(check, name, None)
                if value is not None:
                    _report_unknown(
                        value,
                        _expr_mode(check, name),
                        known,
                        where.expr(*cpath, name),
                        (*cpath, name),
                        rep,
                        _names_of(ex.setup),
                    )
    modules = {check.module for check in ex.checks if check.kind == "pytest"}
    if len(modules) > 1:
        rep.at(
            (*base, "checks"),
            f"its pytest checks import the code as different modules ({', '.join(sorted(modules))}): use one",
        )
    _validate_mistakes(ex, base, where, rep, known, check_ids)
    for k, wrong in enumerate(ex.wrong_solutions):
        wpath = (*base, "wrong_solutions", k)
        _check_code(wrong.code, where.field(*wpath, "code"), (*wpath, "code"), rep)
    for k, accepted in enumerate(ex.accepted_solutions):
        apath = (*base, "accepted_solutions", k)
        _check_code(accepted, where.field(*apath), apath, rep, what="accepted solution")
    for k, variant in enumerate(ex.variants):
        vpath = (*base, "variants", k)
        _check_code(variant, where.field(*vpath), vpath, rep, what="variant")
    declared: set[str] = set()
    for k, equivalent in enumerate(ex.equivalent_mutants):
        if equivalent.mutant in declared:
            rep.at((*base, "equivalent_mutants", k, "mutant"), f"mutant {equivalent.mutant!r} is declared twice")
        declared.add(equivalent.mutant)


def _validate_mistakes(
    ex: m.Exercise, base: tuple, where: _Where, rep: _Reporter, known: set[str] | None, check_ids: set[str]
) -> None:
    mistake_ids: set[str] = set()
    for k, mistake in enumerate(ex.mistakes):
        mpath = (*base, "mistakes", k)
        if mistake.stable_id in mistake_ids:
            at = (*mpath, "id") if mistake.id else (*mpath, "message")
            rep.at(at, f"mistake id {mistake.stable_id!r} is used twice in this exercise")
        mistake_ids.add(mistake.stable_id)
        if mistake.when is not None:
            _check_code(mistake.when, where.expr(*mpath, "when"), (*mpath, "when"), rep, what="when", mode="eval")
            if known is not None:
                origin = where.expr(*mpath, "when")
                _report_unknown(mistake.when, "eval", known, origin, (*mpath, "when"), rep, _names_of(ex.setup))
        if mistake.code is not None:
            _check_code(mistake.code, where.field(*mpath, "code"), (*mpath, "code"), rep)
        if mistake.failed_check is not None and mistake.failed_check not in check_ids:
            rep.at((*mpath, "failed_check"), f"no check with id {mistake.failed_check!r} in this exercise")


def _validate_card(
    card: m.Card, base: tuple, where: _Where, rep: _Reporter, lesson: m.Lesson, sections: set[str]
) -> None:
    _check_markdown(card.prompt, where.field(*base, "prompt"), (*base, "prompt"), rep)
    if card.explanation is not None:
        _check_markdown(card.explanation, where.field(*base, "explanation"), (*base, "explanation"), rep)
    if card.teaches and lesson.intuition != UNREADABLE and card.teaches.casefold() not in sections:
        rep.at((*base, "teaches"), f"no heading {card.teaches!r} in this lesson's intuition")
    if isinstance(card, m.PredictCard):
        _check_code(card.code, where.field(*base, "code"), (*base, "code"), rep)
    probe = getattr(card, "probe", None)
    if probe is not None:
        probe_path = (*base, "probe")
        _check_code(probe, where.expr(*probe_path), probe_path, rep, what="probe", mode="eval")
    if isinstance(card, m.ClozeCard):
        for blank in m.CLOZE_BLANK.findall(card.text):
            if not all(alt.strip() for alt in blank.split("|")):
                rep.at((*base, "text"), f"blank {{{{{blank}}}}} has an empty answer")


def partial_lesson(data: dict, folder_id: str) -> Any:
    """What of a lesson that failed the schema can still be checked: its valid exercises and
    cards (None in place of the others), so one ``pack validate`` reports both kinds of problem."""
    from types import SimpleNamespace

    from pydantic import TypeAdapter, ValidationError

    def each(validate: Callable[[Any], Any], items: Any) -> list:
        out = []
        for item in items if isinstance(items, list) else []:
            try:
                out.append(validate(item))
            except ValidationError:
                out.append(None)
        return out

    intuition = data.get("intuition")
    return SimpleNamespace(
        id=data["id"] if isinstance(data.get("id"), str) else folder_id,
        intuition=intuition if isinstance(intuition, str) and intuition.strip() else UNREADABLE,
        prelude=data["prelude"] if isinstance(data.get("prelude"), str) else "",
        exercises=each(m.Exercise.model_validate, data.get("exercises")),
        cards=each(TypeAdapter(m.Card).validate_python, data.get("cards")),
    )


_EXPR_FIELDS = ("expr", "expected", "shares_storage_with", "independent_of", "factory", "probe")


def _expr_mode(check: Any, name: str) -> str:
    # raises may run statements (e.g. `t.view(-1)` or an assignment)
    return "exec" if (name == "expr" and check.kind == "raises") else "eval"


def _validate_check(
    check: Any, cpath: tuple, origin: Callable[..., Pos], expr_origin: Callable[..., Pos], rep: _Reporter
) -> None:
    for name in _EXPR_FIELDS:
        value = getattr(check, name, None)
        if value is None:
            continue
        _check_code(value, expr_origin(*cpath, name), (*cpath, name), rep, what=name, mode=_expr_mode(check, name))
    if check.kind == "python":
        _check_code(check.code, origin(*cpath, "code"), (*cpath, "code"), rep)
    if check.kind == "pytest":
        _validate_pytest(check, cpath, origin, rep)
    if check.kind == "source":
        for key in ("forbid", "require"):
            for r, rule in enumerate(getattr(check, key)):
                if not rule.strip():
                    rep.at((*cpath, key, r), "is empty")
        if check.through and not any(rule.strip().endswith("[]=") for rule in check.forbid):
            rep.at((*cpath, "through"), "names views to write through, but no forbid rule is a write rule (NAME[]=)")
    if check.kind == "function":
        if check.property is not None:
            _check_code(
                check.property, expr_origin(*cpath, "property"), (*cpath, "property"), rep, what="property", mode="eval"
            )
        for a, arg in enumerate(check.args):
            earlier = [b.name for b in check.args[:a]]
            for key in ("of", "broadcasts_with"):
                ref = getattr(arg, key)
                if ref is not None and all(earlier) and ref not in earlier:
                    rep.at((*cpath, "args", a, key), f"{ref!r} is not the name of an earlier argument")
            if arg.dim is not None and arg.dim not in check.dims:
                rep.at((*cpath, "args", a, "dim"), f"dimension {arg.dim!r} is not defined in dims")
            if arg.transform is not None:
                _check_code(
                    arg.transform,
                    expr_origin(*cpath, "args", a, "transform"),
                    (*cpath, "args", a, "transform"),
                    rep,
                    what="transform",
                    mode="eval",
                )
            for dim in arg.shape or []:
                if isinstance(dim, str) and dim not in check.dims:
                    rep.at((*cpath, "args", a, "shape"), f"dimension {dim!r} is not defined in dims")
        for name, (lo, hi) in check.dims.items():
            if lo < 0 or lo > hi:
                rep.at((*cpath, "dims", name), f"range [{lo}, {hi}] needs 0 <= low <= high")


# A learner's module under one of these names would hide the real one from the tests.
_TAKEN_MODULES = frozenset({"torch", "numpy", "pytest", "_pytest", "hypothesis", "ptfund_checks", "tutor"})


def _validate_pytest(check: Any, cpath: tuple, origin: Callable[..., Pos], rep: _Reporter) -> None:
    import sys

    _check_code(check.code, origin(*cpath, "code"), (*cpath, "code"), rep, what="the test file")
    top = check.module.split(".")[0]
    if top in _TAKEN_MODULES or top in sys.stdlib_module_names:
        rep.at(
            (*cpath, "module"),
            f"{top} is a module the tests need as it is: name the learner's code as the tests import it (micrograd.engine)",
        )
    try:
        tree = ast.parse(check.code)
    except SyntaxError:
        return
    if not any(
        (isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test"))
        or (isinstance(n, ast.ClassDef) and n.name.startswith("Test"))
        for n in tree.body
    ):
        rep.at(
            (*cpath, "code"), "the test file defines no test: pytest runs functions named test_... (and Test classes)"
        )


# Names every check expression may use without the exercise defining them (the check
# library's fallbacks and the namespace's own entries; see tutor/checks/namespaces.py).
LIBRARY_NAMES = (
    frozenset({"DEVICE", "torch", "np", "nn", "F", "__name__", "__builtins__", setupnames.SETUP_NAME})
    | frozenset(dir(builtins))
    | frozenset(vocabulary.CHECK_HELPERS)
)


def _bound(tree: ast.AST) -> set[str] | None:
    """Every name a snippet binds anywhere (over-generous on purpose: no false reports);
    None when a star import makes the names unknowable."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    return None
                names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
    return names


def _known_names(ex: m.Exercise) -> set[str] | None:
    """What setup and the reference solution define, statically; None when unknowable."""
    known = set(LIBRARY_NAMES)
    for code in (ex.setup, ex.judge_setup, ex.solution):
        names = _names_of(code)
        if names is None:
            return None
        known |= names
    return known


def _names_of(code: str | None) -> set[str] | None:
    try:
        return _bound(ast.parse(code or ""))
    except (SyntaxError, ValueError):
        return None


def _report_unknown(
    source: str, mode: str, known: set[str], origin: Pos, path: tuple, rep: _Reporter, setup: set[str] | None = None
) -> None:
    """Names ``source`` reads that nothing defines; with ``setup`` (what the setup binds),
    also each ``_setup.NAME`` whose NAME the setup does not bind."""
    try:
        tree = ast.parse(source, mode=mode)
    except (SyntaxError, ValueError):
        return  # already reported as not parsing
    local = _bound(tree) or set()
    seen: set[str] = set()
    for node in ast.walk(tree):
        if (
            setup is not None
            and isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == setupnames.SETUP_NAME
            and node.attr not in setup
        ):
            rep.at(
                path,
                f"{setupnames.SETUP_NAME}.{node.attr} reads what the setup bound to {node.attr}, and the setup "
                f"binds no {node.attr}",
                line=origin.line + node.lineno - 1,
                col=node.col_offset + (origin.col if node.lineno == 1 else 1),
                file=origin.file,
            )
        if not isinstance(node, ast.Name) or not isinstance(node.ctx, ast.Load):
            continue
        name = node.id
        if name in known or name in local or name in seen:
            continue
        seen.add(name)
        line = origin.line + node.lineno - 1
        col = node.col_offset + (origin.col if node.lineno == 1 else 1)
        rep.at(
            path,
            f"{name} is defined neither by setup nor by the solution (nor by the check library): "
            "a learner would be told they did not define it",
            line=line,
            col=col,
            file=origin.file,
        )
