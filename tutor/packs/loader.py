"""Load a pack folder into models, collecting every problem with its file:line:col.

Loading never executes pack code: code is only parsed (see validate.py).
"""

from __future__ import annotations

import difflib
import gc
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from tutor.files import TooLarge, Unreadable, read_bounded
from tutor.packs import models as m
from tutor.packs.cache import LessonCache, digest, open_cache
from tutor.packs.files import inside, walk
from tutor.packs.limits import MAX_FILE_BYTES
from tutor.packs.problems import UNREADABLE, PackError, Pos, Problem, field_path
from tutor.packs.yamlsrc import Located, YamlSyntaxError, load_located

if TYPE_CHECKING:
    from tutor.packs.installed import PackDistribution

MANIFEST = "pack.yaml"
LESSON_FILE = "lesson.yaml"
CODE_KEYS = frozenset({"setup", "judge_setup", "starter", "solution", "code", "prelude"})
MARKDOWN_KEYS = frozenset({"prompt", "intuition", "explanation"})
# Fields holding a Python expression: a YAML list or number there needs quotes.
_EXPR_KEYS = frozenset(
    {"expr", "expected", "when", "factory", "probe", "shares_storage_with", "independent_of", "transform", "property"}
)
# A one-line value ending in .py/.md names a file beside the YAML (or, from ../, one that
# lessons share: _outside_its_folders).
FILE_REF = re.compile(r"^(\.\./)*[\w][\w./-]*\.(py|md)$")
_ALL_FIELDS = sorted(
    {
        name
        for model in vars(m).values()
        if isinstance(model, type) and issubclass(model, BaseModel)
        for name in model.model_fields
    }
)


class PackNames:
    """A loaded pack's id and title, as its manifest says (a Pack, or its outline)."""

    manifest: m.PackManifest
    root: Path
    builtin: bool
    distribution: PackDistribution | None

    @property
    def id(self) -> str:
        return self.manifest.id

    @property
    def title(self) -> str:
        return self.manifest.title

    @property
    def source(self) -> str:
        """Where the pack comes from, in words: built-in, the distribution pip installed, or its folder."""
        if self.builtin:
            return "built-in"
        if self.distribution is not None:
            return f"installed: {self.distribution}"
        return str(self.root)


@dataclass
class Pack(PackNames):
    manifest: m.PackManifest
    lessons: list[m.Lesson]
    root: Path
    builtin: bool = False
    # (lesson id, *path in lesson.yaml) -> where that value's text starts
    origins: dict[tuple, Pos] = field(default_factory=dict, repr=False)
    # Not problems (the pack works) but likely mistakes; `pack validate` prints them.
    warnings: list[Problem] = field(default_factory=list, repr=False)
    # Set for a pack installed with pip (tutor/packs/installed.py); None for a folder.
    distribution: PackDistribution | None = None

    def lesson(self, lesson_id: str) -> m.Lesson | None:
        return next((lesson for lesson in self.lessons if lesson.id == lesson_id), None)

    def origin(self, lesson_id: str, *path: str | int) -> Pos:
        key = (lesson_id, *path)
        while key not in self.origins and len(key) > 1:
            key = key[:-1]
        return self.origins.get(key, Pos(self.root / lesson_id / LESSON_FILE, 1, 1))


class _Reporter:
    """Turns paths inside a YAML file into Problems with positions."""

    def __init__(self, root: Path, located: Located | None, file: Path, real_root: Path | None = None):
        self.root, self.located, self.file = root, located, file
        self._real_root = real_root  # given by a caller that reads many files of one pack
        self.problems: list[Problem] = []
        self.read: list[tuple[Path, str]] = []  # every file read, with its digest (for the cache)
        self.data: object = None
        self.quoted: set[tuple] = set()  # paths already told "quote it": their schema errors only repeat it

    @property
    def real_root(self) -> Path:
        if self._real_root is None:
            self._real_root = self.root.resolve()
        return self._real_root

    def at(
        self,
        path: tuple,
        message: str,
        *,
        key: bool = False,
        line: int | None = None,
        col: int | None = None,
        file: Path | None = None,
    ) -> None:
        if line is None:
            lookup = (*path, "__key__") if key else path
            line, col = self.located.pos(lookup) if self.located else (1, 1)
        self.problems.append(Problem(self.display(file or self.file), line, col or 1, field_path(path), message))

    def display(self, file: Path) -> str:
        # Paths as the author typed them relative to where the pack folder sits.
        try:
            return str(file.relative_to(Path.cwd()))
        except ValueError:
            return str(file)


def _read_text(path: Path, rep: _Reporter, path_in_yaml: tuple = ()) -> str | None:
    real = path.resolve()
    if not inside(rep.real_root, real):
        rep.at(path_in_yaml, f"{path.name} is reached through a link that leads out of the pack (to {real})")
        return None
    try:
        data = read_bounded(real, MAX_FILE_BYTES)
    except TooLarge:
        rep.at(path_in_yaml, f"{path.name} is larger than {MAX_FILE_BYTES:,} bytes (the limit for a pack file)")
        return None
    except Unreadable as exc:
        if exc.reason == "no such file":
            rep.at(path_in_yaml, f"file not found: {path.name}")
        elif exc.reason.startswith("it is"):  # a folder, a FIFO, a device
            rep.at(path_in_yaml, f"{path.name} is not a regular file")
        else:
            rep.at(path_in_yaml, f"cannot read {path.name}: {exc.reason}")
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        rep.at((), f"not UTF-8 text (byte {exc.start})", line=line, col=1, file=path)
        return None
    rep.read.append((path, digest(data)))
    return text


def _resolve_refs(
    data: Any, path: tuple, located: Located, base: Path, rep: _Reporter, origins: dict[tuple, Pos]
) -> Any:
    """Replace file references by their text and note where each code/Markdown text starts."""
    if isinstance(data, dict):
        for key, value in list(data.items()):
            data[key] = _resolve_one(value, (*path, key), key, located, base, rep, origins)
        return data
    if isinstance(data, list):
        return [_resolve_refs(v, (*path, i), located, base, rep, origins) for i, v in enumerate(data)]
    return data


def _outside_its_folders(name: str, base: Path) -> str | None:
    """Why a file reference from the lesson folder ``base`` names a file it may not use, or
    None. A lesson's files sit beside its lesson.yaml; a file several lessons share sits in
    a folder of the pack that is no lesson's (``../shared/prelude.py``). Links that lead
    out of the pack are refused when the file is read."""
    parts = Path(name).parts
    if ".." not in parts:
        return None
    if parts[0] != ".." or ".." in parts[1:] or len(parts) < 3:
        return (
            f"{name} is outside the lesson folder: keep files beside lesson.yaml, and a file lessons share in a "
            "folder of the pack that is no lesson's (../shared/FILE)"
        )
    if (base.parent / parts[1] / LESSON_FILE).is_file():
        return (
            f"{name} is in the folder of the lesson {parts[1]}: a file lessons share goes in a folder of the pack "
            "that is no lesson's (../shared/FILE)"
        )
    return None


def _resolve_one(value, path, key, located, base, rep, origins):
    textual = key in CODE_KEYS or key in MARKDOWN_KEYS
    if key == "hints" and isinstance(value, list):
        return [_resolve_one(v, (*path, i), "prompt", located, base, rep, origins) for i, v in enumerate(value)]
    if key in ("accepted_solutions", "variants") and isinstance(value, list):
        return [_resolve_one(v, (*path, i), "code", located, base, rep, origins) for i, v in enumerate(value)]
    if not textual or not isinstance(value, str):
        return _resolve_refs(value, path, located, base, rep, origins)
    line, col = located.pos(path)
    if FILE_REF.match(value.strip()):
        name = value.strip()
        target = (base / name).resolve()
        # On failure a harmless stand-in keeps the one real problem from causing others.
        stand_in = "pass\n" if key in CODE_KEYS else UNREADABLE
        outside = _outside_its_folders(name, base)
        if outside:
            rep.at(path, outside)
            return stand_in
        text = _read_text(base / name, rep, path)
        if text is None:
            return stand_in
        origins[path] = Pos(target, 1, 1)
        return text
    if path in located.block:
        line, col = line + 1, 1
    origins[path] = Pos(located.file, line, col)
    return value


def _validation_problems(exc: ValidationError, data: Any, rep: _Reporter) -> None:
    for err in exc.errors(include_url=False):
        loc = err["loc"]
        path = _data_path(data, loc)
        if path in rep.quoted:
            continue
        kind = err["type"]
        msg = err["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        if kind == "missing":
            rep.at(path, f"required field {loc[-1]!r} is missing")
            continue
        if kind == "extra_forbidden":
            name = str(loc[-1])
            close = difflib.get_close_matches(name, _ALL_FIELDS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            rep.at(path, f"unknown field {name!r}{hint}", key=True)
            continue
        if kind == "union_tag_not_found":
            tag = err.get("ctx", {}).get("discriminator", "kind").strip("'")
            choices = m.CHECK_KINDS if tag == "kind" else m.CARD_TYPES
            rep.at(path, f"needs {tag}: one of {', '.join(choices)}")
            continue
        if kind == "union_tag_invalid":
            tag = err.get("ctx", {}).get("discriminator", "kind").strip("'")
            choices = m.CHECK_KINDS if tag == "kind" else m.CARD_TYPES
            got = err.get("ctx", {}).get("tag")
            rep.at((*path, tag), f"unknown {tag} {got!r}: expected one of {', '.join(choices)}")
            continue
        given = err.get("input")
        if kind == "string_type" and loc and loc[-1] in _EXPR_KEYS and isinstance(given, (list, dict, int, float)):
            what = {list: "a YAML list", dict: "a YAML mapping", bool: "a YAML boolean"}.get(
                type(given), "a YAML number"
            )
            text = repr(given) if not isinstance(given, bool) else str(given)
            msg = f"is {what}, not a Python expression: quote it, e.g. {loc[-1]}: {json.dumps(text)}"
        elif kind == "string_type" and isinstance(given, (int, float)) and not isinstance(given, bool):
            msg += " (put it in quotes)"
        if kind == "string_pattern_mismatch" and err.get("ctx", {}).get("pattern") == m.ID_PATTERN:
            msg = f"{err.get('input')!r} is not an id: ids use lowercase letters, digits, '-' and '_' (e.g. views-and-strides)"
        if kind == "literal_error" and "expected" in err.get("ctx", {}):
            msg = f"expected {err['ctx']['expected']}"
        rep.at(path, msg)


def _data_path(data: Any, loc: tuple) -> tuple:
    """Follow a pydantic loc through the raw data, skipping discriminator tags."""
    path: list = []
    cur = data
    for part in loc:
        if isinstance(cur, dict):
            if part in cur:
                path.append(part)
                cur = cur[part]
            elif part in (cur.get("kind"), cur.get("type")):
                continue
            else:
                path.append(part)
                cur = None
        elif isinstance(cur, list) and isinstance(part, int) and part < len(cur):
            path.append(part)
            cur = cur[part]
        else:
            continue  # validator-internal loc parts such as 'function-after'
    # the position lookup climbs to the nearest ancestor that exists
    return tuple(path)


# A line holding an expression field, `expr: VALUE` (in a list item or a flow mapping too).
_EXPR_LINE = re.compile(r"^\s*(?:-\s+)?\{?\s*(?P<key>[A-Za-z_]+)\s*:\s+(?P<value>\S.*?)\s*$")
_YAML_MARKS = {"&": "an anchor", "!": "a tag", "*": "an alias"}


def _quote(key: str, value: str) -> str:
    return f"quote it, e.g. {key}: {json.dumps(value)}"


def _syntax_hint(text: str, line: int) -> str:
    """For a YAML syntax error on an expression field's line (`expr: lambda x: x`): why, and the fix."""
    lines = text.splitlines()
    found = _EXPR_LINE.match(lines[line - 1]) if 0 < line <= len(lines) else None
    if found is None or found["key"] not in _EXPR_KEYS:
        return ""
    key = found["key"]
    return f" ({key} holds a Python expression, and YAML reads this one as YAML: {_quote(key, found['value'])})"


def _yaml_marks_in_expressions(text: str, located: Located, rep: _Reporter) -> None:
    """An expression field whose value starts with &, ! or * parses, but as YAML's anchor,
    tag or alias: the expression is not what the author typed (`expr: *args` is another value)."""
    lines = text.splitlines()
    for path, (line, col) in list(located.positions.items()):
        if len(path) < 2 or path[-1] != "__key__" or path[-2] not in _EXPR_KEYS or not 0 < line <= len(lines):
            continue
        key = str(path[-2])
        rest = lines[line - 1][col - 1 :]
        if not rest.startswith(key):
            continue
        after = rest[len(key) :].lstrip()
        if not after.startswith(":"):
            continue
        value = after[1:].strip()
        if value[:1] in _YAML_MARKS:
            at = col + rest.index(value, len(key))
            rep.quoted.add(path[:-1])
            rep.at(
                path[:-1],
                f"starts with {value[0]!r}, which YAML reads as {_YAML_MARKS[value[0]]}, not as part of the "
                f"expression: {_quote(key, value)}",
                line=line,
                col=at,
            )


def _load_yaml(
    file: Path, root: Path, model: type[BaseModel], resolve: bool, rep: _Reporter | None = None
) -> tuple[Any, dict[tuple, Pos], list[Problem], Located | None]:
    """Parse, resolve file references and validate one YAML file into ``model``.

    Returns (object or None, origins, problems, Located or None); ``rep`` (made here when
    not given) ends up holding the files read and ``rep.data`` the resolved plain data.
    """
    rep = rep or _Reporter(root, None, file)
    text = _read_text(file, rep)
    if text is None:
        if not rep.problems:
            rep.at((), "cannot read")
        return None, {}, rep.problems, None
    try:
        located = load_located(text, file)
    except YamlSyntaxError as exc:
        rep.at((), exc.message + _syntax_hint(text, exc.line), line=exc.line, col=exc.col)
        return None, {}, rep.problems, None
    rep.located = located
    for path, line, col, message in located.problems:
        rep.at(path, message, line=line, col=col)
    _yaml_marks_in_expressions(text, located, rep)
    if not isinstance(located.data, dict):
        rep.at(
            (),
            f"expected a mapping of fields ({model.__name__}), found {type(located.data).__name__ if located.data is not None else 'an empty file'}",
        )
        return None, {}, rep.problems, located
    origins: dict[tuple, Pos] = {}
    data = _resolve_refs(located.data, (), located, file.parent, rep, origins) if resolve else located.data
    rep.data = data
    try:
        obj = model.model_validate(data)
    except ValidationError as exc:
        _validation_problems(exc, data, rep)
        return None, origins, rep.problems, located
    return obj, origins, rep.problems, located


def check_pack(root: str | Path, *, builtin: bool = False, cache: bool = True) -> tuple[Pack | None, list[Problem]]:
    """Load and validate; return the pack (None if unusable) and every problem found.

    ``cache``: take unchanged problem-free lessons from the lesson cache (see cache.py).
    """
    # Loading makes hundreds of thousands of short-lived objects and no cycles worth
    # collecting: the cyclic collector's passes over them were a fifth of the time.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _check_pack(Path(root), builtin, cache)
    finally:
        if collecting:
            gc.enable()


def load_manifest(root: Path, warnings: list[Problem] | None = None) -> tuple[m.PackManifest | None, list[Problem]]:
    """The pack's manifest, validated (its lesson folders exist), and the problems found;
    likely mistakes that are not problems (a lesson folder not listed) go to ``warnings``."""
    from tutor.packs.validate import unlisted_lessons, validate_manifest

    problems: list[Problem] = []
    if not root.is_dir():
        return None, [Problem(str(root), 1, 1, "", "not a folder (a pack is a folder with pack.yaml)")]
    manifest_file = root / MANIFEST
    if not manifest_file.is_file():
        return None, [
            Problem(
                str(manifest_file),
                1,
                1,
                "",
                "pack.yaml not found: is this a pack folder? (`ptfund-tutor pack new DIR` makes one)",
            )
        ]
    problems += _links_out(root)
    manifest, _, found, located = _load_yaml(manifest_file, root, m.PackManifest, resolve=False)
    problems += found
    if manifest is None:
        return None, problems
    rep = _Reporter(root, located, manifest_file)
    validate_manifest(manifest, root, rep)
    if warnings is not None:
        warn = _Reporter(root, located, manifest_file)
        unlisted_lessons(manifest, root, warn)
        warnings += warn.problems
    return manifest, problems + rep.problems


def _check_pack(root: Path, builtin: bool, use_cache: bool) -> tuple[Pack | None, list[Problem]]:
    warnings: list[Problem] = []
    manifest, problems = load_manifest(root, warnings)
    if manifest is None:
        return None, problems
    lessons: list[m.Lesson] = []
    origins: dict[tuple, Pos] = {}
    cache = open_cache(root) if use_cache else None
    for lesson_id in manifest.lessons:
        if not (root / lesson_id / LESSON_FILE).is_file():
            continue  # reported by validate_manifest
        lesson, lesson_origins, found = load_lesson(root, lesson_id, cache)
        problems += found
        if lesson is None:
            continue
        lessons.append(lesson)
        origins.update({(lesson_id, *k): v for k, v in lesson_origins.items()})
    if cache is not None:
        cache.save()
    problems.sort(key=lambda p: (p.file, p.line, p.col))
    if manifest.hidden_checks == "all":
        for lesson in lessons:
            lesson.exercises = [m.every_check_hidden(ex) for ex in lesson.exercises]
    pack = Pack(manifest=manifest, lessons=lessons, root=root, builtin=builtin, origins=origins, warnings=warnings)
    return pack, problems


def load_lesson(
    root: Path, lesson_id: str, cache: LessonCache | None
) -> tuple[m.Lesson | None, dict[tuple, Pos], list[Problem]]:
    """One lesson of the pack at ``root``: the model (None when the schema refused it; a
    model with problems is usable by nobody but ``pack validate``), where each value
    starts, and every problem; from ``cache`` when its files are unchanged, and
    remembered there when it loads without a problem (the caller saves the cache)."""
    from tutor.packs.validate import partial_lesson, validate_lesson

    lesson, lesson_origins = _remembered(cache, lesson_id)
    if lesson is not None:
        return lesson, lesson_origins, []
    lesson_file = root / lesson_id / LESSON_FILE
    rep = _Reporter(root, None, lesson_file)
    lesson, lesson_origins, found, lesson_located = _load_yaml(lesson_file, root, m.Lesson, resolve=True, rep=rep)
    problems = list(found)
    if lesson is None:
        raw = getattr(rep, "data", None)
        if isinstance(raw, dict) and lesson_located is not None:
            # Schema problems do not hide the semantic ones: one round of fixes.
            lrep = _Reporter(root, lesson_located, lesson_file)
            validate_lesson(partial_lesson(raw, lesson_id), lesson_id, lesson_origins, lrep)
            problems += lrep.problems
        return None, lesson_origins, problems
    lrep = _Reporter(root, lesson_located, lesson_file)
    validate_lesson(lesson, lesson_id, lesson_origins, lrep, earlier=found)
    problems += lrep.problems
    if cache is not None and not problems:
        cache.remember(lesson_id, rep.data, lesson_origins, rep.read)
    return lesson, lesson_origins, problems


def _links_out(root: Path) -> list[Problem]:
    """A link that leaves the pack would let it read, or run, files no one reviewed with it."""
    rep = _Reporter(root, None, root)
    return [
        Problem(
            rep.display(root / name), 1, 1, "", f"link leads out of the pack (to {target}): copy the file in instead"
        )
        for name, target in walk(root).links_out
    ]


def _remembered(cache: LessonCache | None, lesson_id: str) -> tuple[m.Lesson | None, dict[tuple, Pos]]:
    hit = cache.lesson(lesson_id) if cache is not None else None
    if hit is None:
        return None, {}
    data, origins = hit
    try:
        return m.Lesson.model_validate(data), origins
    except ValidationError:  # only if the models changed in a way the fingerprint missed
        return None, {}


def load_pack(root: str | Path, *, builtin: bool = False, cache: bool = True) -> Pack:
    """Load a pack that must be free of problems; raise PackError listing them otherwise."""
    pack, problems = check_pack(root, builtin=builtin, cache=cache)
    if problems or pack is None:
        raise PackError(Path(root), problems)
    return pack
