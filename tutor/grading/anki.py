"""Recall cards as an Anki deck (``progress export --anki``), written with genanki.

One note per card, one deck per lesson (``Pack title::Lesson title``). A note's guid comes
from the pack, lesson and card ids, and the models' and decks' ids are fixed, so importing
a second export into Anki updates the notes of the first instead of adding copies. Choice,
short, numeric and predict cards become front/back notes; cloze cards become Anki cloze
notes (``{{answer|other}}`` -> ``{{c1::answer}}``, all blanks on one card). A predict card's back is the key its code
produced in a kernel, which the caller passes in: this module runs nothing.
"""

from __future__ import annotations

import hashlib
import html
import io
import json
import os
import sqlite3
import tempfile
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tutor.files import write_atomic
from tutor.packs.models import CLOZE_BLANK

if TYPE_CHECKING:
    from tutor.packs.catalog import CardRef
    from tutor.progress.records import Review

# Fixed ids: Anki keys note types and decks by id, so a re-export must reuse them.
BASIC_MODEL_ID = 1893456001
CLOZE_MODEL_ID = 1893456002
_CSS = ".card { font-family: sans-serif; font-size: 18px; text-align: left; } pre { text-align: left; }"


@dataclass(frozen=True)
class DeckSummary:
    notes: int
    decks: int
    reviews: int


def note_guid(pack: str, lesson: str, card: str) -> str:
    """Stable across exports: the same card is the same Anki note."""
    import genanki

    return genanki.guid_for("ptfund-tutor", pack, lesson, card)


def stable_id(*parts: str) -> int:
    """A positive 63-bit id from names (Anki's deck ids are SQLite integers)."""
    return int.from_bytes(hashlib.sha256("\0".join(parts).encode()).digest()[:8], "big") >> 2


@cache
def _models() -> tuple[Any, Any]:
    import genanki

    basic = genanki.Model(
        BASIC_MODEL_ID,
        "ptfund-tutor card",
        fields=[{"name": "Front"}, {"name": "Back"}, {"name": "Explanation"}, {"name": "Source"}],
        templates=[
            {
                "name": "Card 1",
                "qfmt": "{{Front}}",
                "afmt": '{{FrontSide}}<hr id="answer">{{Back}}<br>{{Explanation}}<div><small>{{Source}}</small></div>',
            }
        ],
        css=_CSS,
    )
    cloze = genanki.Model(
        CLOZE_MODEL_ID,
        "ptfund-tutor cloze",
        fields=[{"name": "Text"}, {"name": "Explanation"}, {"name": "Source"}],
        templates=[
            {
                "name": "Cloze",
                "qfmt": "{{cloze:Text}}",
                "afmt": "{{cloze:Text}}<br>{{Explanation}}<div><small>{{Source}}</small></div>",
            }
        ],
        css=_CSS,
        model_type=genanki.Model.CLOZE,
    )
    return basic, cloze


def _md(text: str | None) -> str:
    if not text:
        return ""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).render(text).strip()


def _code(text: str) -> str:
    return f"<pre><code>{html.escape(text.rstrip())}</code></pre>"


def cloze_text(text: str) -> str:
    """``{{a|b}}`` blanks as Anki's ``{{c1::a}}``; the rest escaped. Every blank is c1: one
    card asks for all of them at once, as the tutor's quiz does."""
    out, last = [], 0
    for match in CLOZE_BLANK.finditer(text):
        out.append(html.escape(text[last : match.start()]))
        first = match.group(1).split("|")[0].strip()
        out.append(f"{{{{c1::{html.escape(first)}}}}}")
        last = match.end()
    out.append(html.escape(text[last:]))
    return "".join(out)


def note_fields(ref: CardRef, predict_key: str | None = None) -> tuple[bool, list[str]]:
    """(is a cloze note, its fields) for one card."""
    card = ref.card
    source = html.escape(f"{ref.pack.title} · {ref.lesson.title} · {ref.key}")
    explanation = _md(card.explanation)
    if card.type == "cloze":
        return True, [_md(card.prompt) + "<br>" + cloze_text(card.text), explanation, source]
    front = _md(card.prompt)
    if card.type == "choice":
        letters = "ABCDEFGHI"
        front += "<ol type='A'>" + "".join(f"<li>{html.escape(o.text)}</li>" for o in card.options) + "</ol>"
        i, right = next((i, o) for i, o in enumerate(card.options) if o.correct)
        back = f"<b>{letters[i]}. {html.escape(right.text)}</b><br>{html.escape(right.feedback)}"
    elif card.type == "short":
        back = html.escape(card.answers[0]) if card.answers else html.escape(card.regex or "")
        if len(card.answers) > 1:
            back += "<br><small>also: " + ", ".join(html.escape(a) for a in card.answers[1:]) + "</small>"
    elif card.type == "numeric":
        back = f"{card.answer:g}"
        if card.tolerance:
            back += f" (± {card.tolerance:g})"
    else:  # predict
        front += _code(card.code)
        back = _code(predict_key if predict_key is not None else card.expected)
    return False, [front, back, explanation, source]


def write_deck(
    target: str | os.PathLike,
    refs: Iterable[CardRef],
    predict_keys: Mapping[str, str],
    reviews: Iterable[Review] = (),
) -> DeckSummary:
    """Write the .apkg atomically (beside the target, then renamed).

    ``predict_keys``: qualified card id -> the key its code printed in a kernel.
    ``reviews``: logged reviews to carry over as Anki's review history (revlog).
    """
    import genanki

    basic, cloze = _models()
    decks: dict[tuple[str, str], Any] = {}
    guids: dict[tuple[str, str], str] = {}
    for ref in refs:
        key = (ref.pack.id, ref.lesson.id)
        if key not in decks:
            decks[key] = genanki.Deck(stable_id(*key), f"{ref.pack.title}::{ref.lesson.title}")
        is_cloze, fields = note_fields(ref, predict_keys.get(ref.qualified))
        guid = note_guid(ref.pack.id, ref.lesson.id, ref.card.id)
        guids[(ref.pack.id, ref.key)] = guid
        decks[key].add_note(
            genanki.Note(
                model=cloze if is_cloze else basic,
                fields=fields,
                guid=guid,
                tags=[f"ptfund::{ref.pack.id}", f"ptfund::{ref.pack.id}::{ref.lesson.id}", f"type::{ref.card.type}"],
            )
        )
    fd, db_name = tempfile.mkstemp(suffix=".anki2")
    os.close(fd)
    try:
        conn = sqlite3.connect(db_name)
        try:
            import itertools
            import time

            now = time.time()
            genanki.Package(list(decks.values())).write_to_db(conn.cursor(), now, itertools.count(int(now * 1000)))
            n_reviews = _write_history(conn, guids, reviews)
            conn.commit()
        finally:
            conn.close()
        package = io.BytesIO()  # a deck of text notes: small enough to build in memory
        with zipfile.ZipFile(package, "w", zipfile.ZIP_DEFLATED) as z:
            z.write(db_name, "collection.anki2")
            z.writestr("media", json.dumps({}))
        write_atomic(target, package.getvalue())
    finally:
        Path(db_name).unlink(missing_ok=True)
    return DeckSummary(notes=len(guids), decks=len(decks), reviews=n_reviews)


def _write_history(conn: sqlite3.Connection, guids: Mapping[tuple[str, str], str], reviews: Iterable[Review]) -> int:
    """Anki's revlog rows for the reviews of exported cards (ease 1 Again, 3 Good)."""
    card_ids = {
        guid: cid
        for guid, cid in conn.execute("SELECT notes.guid, cards.id FROM cards JOIN notes ON cards.nid = notes.id")
    }
    rows = []
    used: set[int] = set()
    for r in reviews:
        guid = guids.get((r.pack, r.item))
        if guid is None or guid not in card_ids:
            continue  # a card no loaded pack has now
        rid = int(r.at.timestamp() * 1000)
        while rid in used:  # revlog ids are millisecond timestamps and must be unique
            rid += 1
        used.add(rid)
        ease = 3 if r.correct else 1
        rows.append((rid, card_ids[guid], -1, ease, 0, 0, 0, min(r.duration_ms or 0, 60_000), 1))
    conn.executemany("INSERT INTO revlog VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    return len(rows)
