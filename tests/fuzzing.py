"""Mutations of lesson.yaml, pack.yaml and progress export files, and of what `grade` takes
from a class (exports handed in, Gradescope's submission_metadata.json), and the check that
a mutated file gets clean problems or one sentence, never a traceback.

Shared by tests/test_packs_fuzz.py (hypothesis, a few hundred cases per file type in CI)
and scripts/fuzz_packs.py (the long run: thousands of seeds per file type). A case is a
seed: the same seed gives the same mutated file, so a failure is reproduced by its seed.
"""

from __future__ import annotations

import json
import random
import shutil
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from tutor.errors import TutorError
from tutor.packs.loader import check_pack
from tutor.packs.problems import Problem
from tutor.packs.scaffold import new_pack

# Characters and snippets that mean something to YAML or JSON, and some that mean trouble.
HOSTILE_CHARS = [*list("&*!%@|>-:[]{}#'\"\t\n,?\\~`"), "\x00", "\x1b", "\u2028", "\ufeff", "�", "é", "😀"]
YAML_SNIPPETS = [
    "&a ",
    "*a",
    "&x [*x]",
    "a: &r {b: *r}",
    "<<: *a",
    "!!python/object/apply:os.system ['true']",
    "!!binary aGk=",
    "!custom x",
    "? [a, b]\n: c",
    "---\n",
    "...\n",
    "%YAML 1.1\n---\n",
    "[" * 200,
    "{" * 60,
    "- " * 60 + "x",
    "1e999999",
    ".nan",
    "0x1F",
    "9" * 5000,
    "\nbig: " + "9" * 5000 + "\n",
    "\nlessons: &l [*l]\n",
    "~",
    "|\n  block\n",
    ">-\n  folded\n",
    '"\\u0000"',
    "'unterminated",
    "solution.py",
    "../../etc/passwd.py",
    "/etc/passwd",
    "x.md",
    "{{blank}}",
    "\t",
    "null",
    "yes",
]
JSON_SNIPPETS = [
    "[" * 5000,
    '{"a":' * 3000,
    "1e999999",
    "NaN",
    "-Infinity",
    "9" * 5000,
    '"\\ud800"',
    '"\\u0000"',
    "null",
    "true",
    "[]",
    "{}",
    '""',
    '"2024-13-45T99:00:00+00:00"',
    '"2024-05-01T12:00:00"',
    "-1",
    "1.5",
    '"' + "x" * 100_000 + '"',
    # Valid JSON nested far past any parser's recursion limit (a RecursionError, unless bounded).
    "[" * 100_000 + "]" * 100_000,
    '{"a": ' * 20_000 + "1" + "}" * 20_000,
    '"\\udcff\\ud800"',
]


def mutate_text(text: str, rng: random.Random, snippets: list[str]) -> str:
    """One to three random edits: a character, a deletion, a duplication, a snippet, a cut."""
    for _ in range(rng.randint(1, 3)):
        n = len(text)
        at = rng.randint(0, n)
        kind = rng.randrange(8)
        if kind == 0 and n:
            text = text[: min(at, n - 1)] + rng.choice(HOSTILE_CHARS) + text[min(at, n - 1) + 1 :]
        elif kind == 1:
            text = text[:at] + text[at + rng.randint(1, 40) :]
        elif kind == 2:
            lines = text.splitlines(keepends=True)
            if lines:
                i = rng.randrange(len(lines))
                lines.insert(i, lines[i] * rng.randint(1, 3))
                text = "".join(lines)
        elif kind == 3:
            text = text[:at] + rng.choice(snippets) + text[at:]
        elif kind == 4:
            text = text[:at]
        elif kind == 5:
            lines = text.splitlines(keepends=True)
            if len(lines) > 1:
                i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
                lines[i], lines[j] = lines[j], lines[i]
                text = "".join(lines)
        elif kind == 6:
            lines = text.splitlines(keepends=True)
            if lines:
                i = rng.randrange(len(lines))
                lines[i] = (" " * rng.choice([1, 2, 4]) + lines[i]) if rng.random() < 0.5 else lines[i].lstrip()
                text = "".join(lines)
        else:
            text = text[:at] + rng.choice(HOSTILE_CHARS) * rng.randint(1, 5) + text[at:]
    return text


def to_bytes(text: str, rng: random.Random) -> bytes:
    """Mostly UTF-8; sometimes a stray byte, as a damaged file or another encoding has."""
    data = text.encode("utf-8", errors="surrogateescape")
    if rng.random() < 0.05 and data:
        i = rng.randrange(len(data))
        data = data[:i] + bytes([rng.choice([0x80, 0xFF, 0xC3, 0xE9])]) + data[i + 1 :]
    return data


def mutate_json(doc: object, rng: random.Random) -> object:
    """Replace, delete or add one value somewhere inside the document (a deep copy)."""
    doc = json.loads(json.dumps(doc))
    values: list[object] = [None, True, 0, -1, 10**30, 1.5, "", "x" * 300, [], {}, [[[]]], {"a": {"b": {}}}]
    values += ["2024-05-01T12:00:00", "2999-01-01T00:00:00+00:00", "not a time", "views/copy", "\x00"]
    values += ["\ud800", "x = '\udcff'\n", "\x1b]0;title\x07", "=HYPERLINK(1)"]  # text no file can hold; escapes
    node = doc
    for _ in range(rng.randint(0, 4)):
        children = list(node.values()) if isinstance(node, dict) else node if isinstance(node, list) else []
        inner = [c for c in children if isinstance(c, (dict, list)) and c]
        if not inner:
            break
        node = rng.choice(inner)
    action = rng.choice(["replace", "delete", "add"])
    if isinstance(node, dict) and node:
        key = rng.choice(sorted(node))
        if action == "delete":
            del node[key]
        elif action == "add":
            node[rng.choice([*node.keys(), "extra", "uid", "at", "code"])] = rng.choice(values)
        else:
            node[key] = rng.choice(values)
    elif isinstance(node, list) and node:
        i = rng.randrange(len(node))
        if action == "delete":
            del node[i]
        elif action == "add":
            node.append(rng.choice([node[i], *values]))
        else:
            node[i] = rng.choice(values)
    return doc


# Raw JSON put in place of one value: valid documents a mutation of text rarely reaches.
JSON_FRAGMENTS = [
    "[" * 100_000 + "]" * 100_000,
    '{"a": ' * 20_000 + "1" + "}" * 20_000,
    '"\\ud800"',
    "\"x = '\\udcff'\\n\"",
    '"\\u001b]0;title\\u0007"',
    '"=HYPERLINK(\\"x\\")"',
    "1e999999",
    "NaN",
    "9" * 5000,
    '"' + "x" * 300_000 + '"',
]
PLACEHOLDER = "\x00fuzz-placeholder\x00"


def splice_json(doc: object, rng: random.Random) -> str:
    """The document as text with one value somewhere replaced by a raw fragment."""
    doc = json.loads(json.dumps(doc))
    node = doc
    for _ in range(rng.randint(0, 4)):
        children = list(node.values()) if isinstance(node, dict) else node if isinstance(node, list) else []
        inner = [c for c in children if isinstance(c, (dict, list)) and c]
        if not inner:
            break
        node = rng.choice(inner)
    if isinstance(node, dict) and node:
        node[rng.choice(sorted(node))] = PLACEHOLDER
    elif isinstance(node, list) and node:
        node[rng.randrange(len(node))] = PLACEHOLDER
    return json.dumps(doc, indent=1).replace(json.dumps(PLACEHOLDER), rng.choice(JSON_FRAGMENTS))


# ------------------------------------------------------------------ packs


@dataclass
class PackBase:
    root: Path
    manifest: str
    lesson: str


def make_pack_base(where: Path) -> PackBase:
    root = new_pack(where / "base")
    return PackBase(root, (root / "pack.yaml").read_text(), (root / "first-steps" / "lesson.yaml").read_text())


def pack_case(base: PackBase, which: str, seed: int, work: Path) -> Path:
    """A copy of the base pack with ``which`` ("manifest" or "lesson") mutated by ``seed``."""
    rng = random.Random(seed)
    root = work / "case"
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(base.root, root)
    if which == "manifest":
        (root / "pack.yaml").write_bytes(to_bytes(mutate_text(base.manifest, rng, YAML_SNIPPETS), rng))
    else:
        (root / "first-steps" / "lesson.yaml").write_bytes(to_bytes(mutate_text(base.lesson, rng, YAML_SNIPPETS), rng))
    return root


def check_pack_cleanly(root: Path) -> list[Problem]:
    """Load the pack, and read its outline as `list` does: neither may raise, and every
    problem must be a usable FILE:LINE:COL sentence."""
    from tutor.packs.outline import outline_pack

    _, problems = check_pack(root, cache=False)
    _, outline_problems = outline_pack(root)
    for p in [*problems, *outline_problems]:
        assert isinstance(p, Problem), p
        assert p.line >= 1 and p.col >= 1 and p.message, p
        str(p)
    return problems


# ------------------------------------------------------------------ progress exports

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)


def make_export(where: Path) -> str:
    """The text of a real export: attempts, hints, drafts, reviews, a position and settings."""
    from tutor.progress.store import ProgressStore

    with ProgressStore(where / "base.sqlite3") as store:
        store.record_attempt("demo", "first-steps/zeros", passed=False, code="t = 1\n", content_hash="h")
        store.record_attempt("demo", "first-steps/zeros", passed=True, code="t = 2\n", content_hash="h")
        store.record_hint("demo", "first-steps/zeros", 0)
        store.save_draft("demo", "first-steps/zeros", "t = 3\n", content_hash="h")
        store.set_position("demo", "first-steps", "zeros")
        for day in range(3):
            store.review("demo", "first-steps/dtype-card", day != 1, T0 + timedelta(days=day), content_hash="c")
        return json.dumps(store.export(), indent=1)


def export_case(base_text: str, seed: int) -> bytes:
    rng = random.Random(seed)
    if rng.random() < 0.5:
        text = mutate_text(base_text, rng, JSON_SNIPPETS)
    else:
        text = json.dumps(mutate_json(json.loads(base_text), rng), indent=1)
    return to_bytes(text, rng)


def import_cleanly(data: bytes, store_dir: Path) -> str:
    """What `progress import` does with the bytes: "ok", or the one sentence it refuses with.
    Anything else escaping (a traceback) fails the caller."""
    from tutor.progress.store import ProgressStore
    from tutor.progress.transfer import parse, validate

    try:
        doc = parse(data.decode("utf-8"))
        validate(doc)
    except UnicodeDecodeError:
        return "not UTF-8"
    except ValueError as exc:
        return str(exc)
    try:
        with ProgressStore(store_dir / "progress.sqlite3") as store:
            store.import_(doc)
    except (ValueError, TutorError) as exc:
        return str(exc)
    return "ok"


# ------------------------------------------------------------------ what `grade` reads

# What Gradescope writes beside a submission (their documented example, trimmed).
GRADESCOPE_METADATA = {
    "id": 123456,
    "created_at": "2024-05-01T12:00:00.000000-07:00",
    "assignment": {"id": 25, "title": "PyTorch fundamentals", "due_date": "2024-05-08T23:59:00.000000-07:00"},
    "submission_method": "upload",
    "users": [{"email": "ada@example.edu", "id": 1, "name": "Ada Lovelace"}],
    "previous_submissions": [{"submission_time": "2024-04-30T10:00:00.000000-07:00", "score": 0.0, "results": {}}],
}


def grade_export_case(base_text: str, seed: int) -> bytes:
    """An export as a learner hands it in: the progress export mutations, its attempts aimed
    at the built-in pack's exercises so that some reach the gradebook."""
    text = base_text.replace('"demo"', '"pytorch-fundamentals"').replace("first-steps/zeros", "tensors/leaf-parameter")
    rng = random.Random(seed)
    if rng.random() < 0.3:
        return to_bytes(splice_json(json.loads(text), rng), rng)
    return export_case(text, seed)


def grade_export_cleanly(data: bytes, work: Path) -> str:
    """What `grade` makes of an export file before any kernel starts: the learner's cells,
    their cache keys, the gradebook row and the Gradescope results. Anything escaping fails
    the caller."""
    from tutor.grading import gradescope
    from tutor.grading.gradebook import Cell, Gradebook, Row, too_large_verdict
    from tutor.grading.gradecache import verdict_key
    from tutor.grading.submissions import read_export
    from tutor.grading.verdict import Verdict

    path = work / "learner.json"
    path.write_bytes(data)
    columns = grade_columns()
    learner = read_export(path, columns, name="learner")
    for col in columns:
        if col.name in learner.code:
            verdict_key(col.ref, learner.code[col.name], timeout=None, device=None)
    cells = {}
    for col in columns:
        if col.name in learner.too_large:
            cells[col.name] = Cell("error", too_large_verdict(learner.too_large[col.name]))
        elif col.name in learner.unusable:
            cells[col.name] = Cell("error", Verdict("error", learner.unusable[col.name]))
        else:
            cells[col.name] = Cell("missing" if col.name not in learner.code else "pass")
    book = Gradebook(columns, [Row(learner, cells)])
    book.csv_text()
    json.dumps(book.to_json())
    gradescope.write_results(work, book)
    return "notes" if learner.notes else "ok"


def metadata_case(seed: int) -> bytes:
    rng = random.Random(seed)
    base = json.dumps(GRADESCOPE_METADATA, indent=2)
    pick = rng.random()
    if pick < 0.3:
        text = splice_json(GRADESCOPE_METADATA, rng)
    elif pick < 0.65:
        text = mutate_text(base, rng, JSON_SNIPPETS)
    else:
        text = json.dumps(mutate_json(GRADESCOPE_METADATA, rng), indent=2)
    return to_bytes(text, rng)


def metadata_cleanly(data: bytes, work: Path) -> str | None:
    """The learner's name `grade --gradescope` takes from the metadata (None: it has none)."""
    from tutor.grading.gradescope import learner_name

    (work / "submission_metadata.json").write_bytes(data)
    name = learner_name(work)
    assert name is None or (isinstance(name, str) and name)
    return name


_COLUMNS: list = []


def grade_columns() -> list:
    """The built-in pack's tensors lesson as gradebook columns (loaded once)."""
    if not _COLUMNS:
        from tutor.grading.submissions import columns_for
        from tutor.packs.catalog import Catalog

        _COLUMNS.extend(columns_for(list(Catalog.load().exercises("tensors"))))
    return _COLUMNS
