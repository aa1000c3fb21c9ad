"""The check kinds and card types are listed once, by the pydantic unions in
tutor/packs/models.py; everything else that names them is checked against those lists here,
and so is docs/architecture.md's "where to add" for each."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from tutor.grading import review
from tutor.grading.anki import note_fields
from tutor.grading.cards import grade
from tutor.packs import models as m
from tutor.packs.catalog import CardRef
from tutor.packs.loader import Pack, check_pack

REPO = Path(__file__).resolve().parent.parent
KINDS_SOURCE = REPO / "tutor" / "checks" / "kinds" / "__init__.py"


def _dispatch_table() -> dict[str, str]:
    """KINDS of the check library (read, not imported: it runs in kernels): kind -> function."""
    for node in ast.parse(KINDS_SOURCE.read_text()).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["KINDS"]:
            assert isinstance(node.value, ast.Dict)
            return {ast.literal_eval(k): v.id for k, v in zip(node.value.keys, node.value.values, strict=True)}  # type: ignore[arg-type, attr-defined]
    raise AssertionError("no KINDS in tutor/checks/kinds/__init__.py")


def _doc_table(path: Path, header: str) -> list[str]:
    """The first column of the Markdown table whose header row starts with ``header``."""
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {header} |"))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(line.split("|")[1].strip().strip("`"))
    return rows


def _doc_example_pack(tmp_path: Path) -> Pack:
    """The lesson.yaml of docs/pack-format.md, which shows one card of every type."""
    doc = (REPO / "docs" / "pack-format.md").read_text()
    for name in ("pack.yaml", "lesson.yaml"):
        found = re.search(rf"```yaml {re.escape(name)}\n(.*?)```", doc, re.DOTALL)
        assert found, name
        target = tmp_path / ("sums" if name == "lesson.yaml" else "") / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(found.group(1))
    pack, problems = check_pack(tmp_path, cache=False)
    assert pack is not None, problems
    return pack


def test_every_registry_agrees_with_the_unions(tmp_path: Path):
    kinds, types = list(m.CHECK_KINDS), list(m.CARD_TYPES)
    drift: list[str] = []

    def same(what: str, got: list[str], want: list[str]) -> None:
        if got != want:
            drift.append(f"{what}: {got} (the union says {want})")

    # The dispatch table of the check library, and each entry a function of tutor/checks/kinds/.
    table = _dispatch_table()
    same("KINDS in tutor/checks/kinds/__init__.py", sorted(table), sorted(kinds))
    defined = {
        node.name
        for path in KINDS_SOURCE.parent.glob("*.py")
        for node in ast.parse(path.read_text()).body
        if isinstance(node, ast.FunctionDef)
    }
    drift += [
        f"KINDS[{k!r}] = {f}: no such function in tutor/checks/kinds/" for k, f in table.items() if f not in defined
    ]

    # The JSON schema the built-in pack ships (test_packs_loader keeps it equal to `pack schema`).
    schema = json.loads((REPO / "lessons" / "pack.schema.json").read_text())
    unions = {
        d["propertyName"]: [ref["$ref"].rsplit("/", 1)[1] for ref in node["oneOf"]]
        for node in _walk(schema)
        if isinstance(node, dict) and isinstance(d := node.get("discriminator"), dict)
    }
    same("the schema's checks", unions.get("kind", []), [c.__name__ for c in m.CHECK_MODELS.values()])
    same("the schema's cards", unions.get("type", []), [c.__name__ for c in m.CARD_MODELS.values()])

    # The tables of docs/pack-format.md.
    same("docs/pack-format.md's check kinds", _doc_table(REPO / "docs" / "pack-format.md", "check kind"), kinds)
    same("docs/pack-format.md's card types", _doc_table(REPO / "docs" / "pack-format.md", "card type"), types)

    # What a review shows (the app's quiz and the quiz command both render card_view) and grades.
    same("review.CARD_LABEL", list(review.CARD_LABEL), types)
    same("review.ANSWER_HINT", list(review.ANSWER_HINT), types)
    pack = _doc_example_pack(tmp_path)
    lesson = pack.lessons[0]
    cards = {card.type: card for card in lesson.cards}
    same("the card types docs/pack-format.md's example shows", sorted(cards), sorted(types))
    for kind, card in cards.items():
        try:
            grade(card, "1")
            note_fields(CardRef(pack, lesson, card))
        except Exception as exc:  # a type one of them does not handle
            drift.append(f"card type {kind!r}: {type(exc).__name__}: {exc}")

    assert drift == [], "\n".join(drift)


def _walk(node: object):
    yield node
    if isinstance(node, dict):
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


# ---------------------------------------------------------------- docs/architecture.md's "where to add"


def _files_naming(patterns: list[str]) -> set[str]:
    """Repository paths of the code, the docs and the schema where one of ``patterns`` occurs;
    the modules of tutor/checks/kinds/ count as that folder (one place: "its function")."""
    found = re.compile("|".join(patterns), re.MULTILINE)
    paths = [*(REPO / "tutor").rglob("*.py"), *(REPO / "docs").glob("*.md"), REPO / "lessons" / "pack.schema.json"]
    out = set()
    for path in paths:
        rel = path.relative_to(REPO).as_posix()
        if rel != "docs/architecture.md" and found.search(path.read_text()):
            out.add("tutor/checks/kinds/" if rel.startswith("tutor/checks/kinds/") else rel)
    return out


def _where_to_add(heading: str, following: str) -> str:
    text = (REPO / "docs" / "architecture.md").read_text()
    start = text.index(f"**{heading}.**")
    return text[start : text.index(f"**{following}.**", start)]


def _missing_from(section: str, places: set[str]) -> list[str]:
    """The places the section does not name (a doc of docs/ by its file name, as it links it)."""
    return sorted(p for p in places if (p.rsplit("/", 1)[1] if p.startswith("docs/") else p) not in section)


def test_where_to_add_a_check_kind_names_every_place_a_kind_is_named():
    kinds = "|".join(map(re.escape, m.CHECK_KINDS))
    places = _files_naming(
        [
            r"\b(" + "|".join(c.__name__ for c in m.CHECK_MODELS.values()) + r")\b",  # its model
            r"\b(" + "|".join(_dispatch_table().values()) + r")\b",  # its function
            rf"\.kind == \"({kinds})\"",  # code that special-cases it
            rf"^\s*-?\s*kind: ({kinds})\b",  # a YAML example (docs, the pack new template)
        ]
    )
    # The derivation finds what the doc must name; the floor keeps the search itself honest.
    assert {"tutor/packs/models.py", "tutor/checks/kinds/", "lessons/pack.schema.json"} <= places, places
    assert _missing_from(_where_to_add("A check kind", "A card type"), places) == []


def test_where_to_add_a_card_type_names_every_place_a_type_is_named():
    types = "|".join(map(re.escape, m.CARD_TYPES))
    places = _files_naming(
        [
            r"\b(" + "|".join(c.__name__ for c in m.CARD_MODELS.values()) + r")\b",
            rf"\.type [!=]= \"({types})\"",
            rf"^\s*-?\s*type: ({types})\b",
        ]
    )
    assert {"tutor/packs/models.py", "tutor/grading/cards.py", "lessons/pack.schema.json"} <= places, places
    assert _missing_from(_where_to_add("A card type", "A mutation operator"), places) == []
