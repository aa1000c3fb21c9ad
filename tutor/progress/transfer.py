"""The ``progress export`` format: writing it from the database, validating a document
before ``progress import`` writes anything, and merging it in.

Imported lazily by the store (pydantic is not needed to record progress, and writers
should start fast).
"""

from __future__ import annotations

import json
import os
import sqlite3
from datetime import datetime
from typing import Annotated, Literal

from fsrs import Card, State
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator

from tutor.files import TooLarge, Unreadable, parse_json, read_bounded, too_deep
from tutor.progress.records import (
    CARD_SELECT,
    REVIEW_SELECT,
    Key,
    card_from_row,
    parse_ts,
    review_from_row,
    ts,
    upsert_card,
)
from tutor.progress.scheduling import CardState, rating_for, scheduler, utc
from tutor.progress.settings import read_settings, validate_setting

# The export document's name and version: its one home (the store writes them on export).
FORMAT = "ptfund-tutor-progress"
VERSION = 1


def _aware(v: datetime) -> datetime:
    if v.tzinfo is None:
        raise ValueError("needs a time zone, e.g. +00:00")
    return utc(v)


Time = Annotated[datetime, AfterValidator(_aware)]
# Counts and durations fit SQLite's 64-bit INTEGER with room to spare (a larger number is
# a damaged file, not a learner's history).
MAX_COUNT = 2**53
Text = Annotated[str, Field(min_length=1, max_length=500)]
Uid = Annotated[str, Field(min_length=1, max_length=100)]
Hash = Annotated[str, Field(max_length=200)]


class _M(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)  # strict: "yes" is not a bool


class AttemptIn(_M):
    uid: Uid
    pack: Text
    item: Text
    passed: bool
    at: Time = Field(strict=False)
    code: str
    content_hash: Hash


class HintIn(_M):
    pack: Text
    item: Text
    hint: int = Field(ge=0, le=1000)
    at: Time = Field(strict=False)
    content_hash: Hash | None = None


class DraftIn(_M):
    pack: Text
    item: Text
    code: str
    updated_at: Time = Field(strict=False)
    content_hash: Hash | None = None


class ReviewIn(_M):
    uid: Uid
    pack: Text
    item: Text
    rating: int = Field(ge=1, le=4)
    correct: bool
    at: Time = Field(strict=False)
    duration_ms: int | None = Field(None, ge=0, le=MAX_COUNT)
    content_hash: Hash | None = None


class CardIn(_M):
    pack: Text
    item: Text
    state: int = Field(ge=1, le=3)
    step: int | None = Field(None, ge=0, le=MAX_COUNT)
    stability: float | None = Field(None, gt=0, strict=False, allow_inf_nan=False)
    difficulty: float | None = Field(None, strict=False, allow_inf_nan=False)
    due: Time = Field(strict=False)
    last_review: Time | None = Field(None, strict=False)
    first_review: Time = Field(strict=False)
    reps: int = Field(0, ge=0, le=MAX_COUNT)
    lapses: int = Field(0, ge=0, le=MAX_COUNT)
    content_hash: Hash | None = None

    def to_state(self) -> CardState:
        return CardState(
            pack=self.pack,
            item=self.item,
            state=State(self.state),
            step=self.step,
            stability=self.stability,
            difficulty=self.difficulty,
            due=self.due,
            last_review=self.last_review,
            first_review=self.first_review,
            reps=self.reps,
            lapses=self.lapses,
            content_hash=self.content_hash,
        )


class PositionIn(_M):
    pack: Text
    lesson: Text
    exercise: Text | None = None
    updated_at: Time = Field(strict=False)


class QuizLessonIn(_M):
    pack: Text
    lesson: Text
    how: Literal["opened", "named", "added"]
    at: Time = Field(strict=False)


class ExportDoc(_M):
    format: str
    version: int
    attempts: list[AttemptIn] = Field(default_factory=list)
    hints: list[HintIn] = Field(default_factory=list)
    drafts: list[DraftIn] = Field(default_factory=list)
    cards: list[CardIn] = Field(default_factory=list)
    reviews: list[ReviewIn] = Field(default_factory=list)
    position: PositionIn | None = None
    settings: dict[str, object] = Field(default_factory=dict)
    quiz_lessons: list[QuizLessonIn] = Field(default_factory=list)  # absent from older exports

    @field_validator("settings")
    @classmethod
    def _known_settings(cls, v: dict) -> dict:
        return {name: validate_setting(name, value) for name, value in v.items()}


# Bounds on a file to import: an export nests four levels deep and a year of daily work is
# a few megabytes, so anything past these is not an export (docs/limits.md).
MAX_EXPORT_BYTES = 64 * 1024 * 1024
MAX_EXPORT_DEPTH = 20


def parse(text: str | bytes) -> object:
    """The JSON of an export file, or ValueError with one sentence (never a RecursionError)."""
    if len(text) > MAX_EXPORT_BYTES:
        raise ValueError(f"it is larger than {MAX_EXPORT_BYTES:,} bytes (the limit for a progress export)")
    try:
        return parse_json(text, max_depth=MAX_EXPORT_DEPTH)
    except ValueError as exc:
        if str(exc) == too_deep(MAX_EXPORT_DEPTH):
            raise ValueError(f"{exc}, so it is not a progress export") from None
        raise


def read_export(path: str | os.PathLike, *, follow_links: bool = True) -> ExportDoc:
    """An export file as models: the one reader for `progress import` and `grade`.
    ValueError with one sentence for anything that is not a usable export."""
    try:
        raw = read_bounded(path, MAX_EXPORT_BYTES, follow_links=follow_links)
    except TooLarge:
        raise ValueError(f"it is larger than {MAX_EXPORT_BYTES:,} bytes (the limit for a progress export)") from None
    except Unreadable as exc:
        raise ValueError(exc.reason) from None
    return validate(parse(raw))


def validate(data: object) -> ExportDoc:
    """The document as models, or ValueError with one sentence naming the first problem."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError('it is not a ptfund-tutor progress export (no "format": "ptfund-tutor-progress")')
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ValueError('its "version" is missing or not a whole number')
    if version > VERSION:
        raise ValueError(f"it was exported by a newer ptfund-tutor (format version {version}); upgrade to import it")
    try:
        return ExportDoc.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) if isinstance(p, str) else f"[{p}]" for p in err["loc"]).replace(".[", "[")
        count = exc.error_count()
        more = f" (and {count - 1} more problem{'s' if count > 2 else ''})" if count > 1 else ""
        msg = err["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        raise ValueError(f"{where}: {msg[0].lower() + msg[1:]}{more}") from None


# ---------------------------------------------------------------- export and import


def export_rows(c: sqlite3.Connection) -> dict:
    """Everything in the database, as versioned JSON-ready data (``progress export``)."""
    attempts = [
        {
            "uid": r[0],
            "pack": r[1],
            "item": r[2],
            "passed": bool(r[3]),
            "at": r[4],
            "code": r[5],
            "content_hash": r[6],
        }
        for r in c.execute("SELECT uid, pack, item, passed, at, code, content_hash FROM attempts ORDER BY at, id")
    ]
    hints = [
        {"pack": r[0], "item": r[1], "hint": r[2], "at": r[3], "content_hash": r[4]}
        for r in c.execute("SELECT pack, item, hint, at, content_hash FROM hints ORDER BY pack, item, hint")
    ]
    drafts = [
        {"pack": r[0], "item": r[1], "code": r[2], "updated_at": r[3], "content_hash": r[4]}
        for r in c.execute("SELECT pack, item, code, updated_at, content_hash FROM drafts ORDER BY pack, item")
    ]
    cards = [_card_dict(card_from_row(r)) for r in c.execute(CARD_SELECT + " ORDER BY pack, item")]
    reviews = [
        {
            "uid": r.uid,
            "pack": r.pack,
            "item": r.item,
            "rating": r.rating,
            "correct": r.correct,
            "at": ts(r.at),
            "duration_ms": r.duration_ms,
            "content_hash": r.content_hash,
        }
        for r in map(review_from_row, c.execute(REVIEW_SELECT + " ORDER BY at, id"))
    ]
    row = c.execute("SELECT pack, lesson, exercise, updated_at FROM position WHERE id = 1").fetchone()
    position = None if row is None else {"pack": row[0], "lesson": row[1], "exercise": row[2], "updated_at": row[3]}
    settings = {r[0]: json.loads(r[1]) for r in c.execute("SELECT name, value FROM settings ORDER BY name")}
    quiz_lessons = [
        {"pack": r[0], "lesson": r[1], "how": r[2], "at": r[3]}
        for r in c.execute("SELECT pack, lesson, how, at FROM quiz_lessons ORDER BY at, pack, lesson")
    ]
    return {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": ts(utc()),
        "attempts": attempts,
        "hints": hints,
        "drafts": drafts,
        "cards": cards,
        "reviews": reviews,
        "position": position,
        "settings": settings,
        "quiz_lessons": quiz_lessons,
    }


def import_rows(c: sqlite3.Connection, doc: ExportDoc) -> dict[str, int]:
    """Merge a validated export into the database, inside the caller's write transaction;
    returns how many records were added per kind.

    Importing the same file again adds nothing: attempts and reviews are matched by uid,
    hints by index; drafts and the position keep the newer; settings set here win. A card
    reviewed on both sides is rescheduled by replaying the merged review log.
    """
    added = {"attempts": 0, "hints": 0, "drafts": 0, "reviews": 0, "cards": 0, "quiz_lessons": 0}
    for a in doc.attempts:
        cur = c.execute(
            "INSERT OR IGNORE INTO attempts (uid, pack, item, passed, at, code, content_hash) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (a.uid, a.pack, a.item, int(a.passed), ts(a.at), a.code, a.content_hash),
        )
        added["attempts"] += cur.rowcount
    for h in doc.hints:
        cur = c.execute(
            "INSERT OR IGNORE INTO hints (pack, item, hint, at, content_hash) VALUES (?, ?, ?, ?, ?)",
            (h.pack, h.item, h.hint, ts(h.at), h.content_hash),
        )
        added["hints"] += cur.rowcount
    for d in doc.drafts:
        cur = c.execute(
            "INSERT INTO drafts (pack, item, code, updated_at, content_hash) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (pack, item) DO UPDATE SET code = excluded.code, updated_at = excluded.updated_at, "
            "content_hash = excluded.content_hash WHERE excluded.updated_at > drafts.updated_at",
            (d.pack, d.item, d.code, ts(d.updated_at), d.content_hash),
        )
        added["drafts"] += cur.rowcount
    added["reviews"], added["cards"] = _merge_reviews(c, doc)
    if doc.position is not None:
        p = doc.position
        c.execute(
            "INSERT INTO position (id, pack, lesson, exercise, updated_at) VALUES (1, ?, ?, ?, ?) "
            "ON CONFLICT (id) DO UPDATE SET pack = excluded.pack, lesson = excluded.lesson, "
            "exercise = excluded.exercise, updated_at = excluded.updated_at "
            "WHERE excluded.updated_at > position.updated_at",
            (p.pack, p.lesson, p.exercise, ts(p.updated_at)),
        )
    for q in doc.quiz_lessons:
        cur = c.execute(
            "INSERT OR IGNORE INTO quiz_lessons (pack, lesson, how, at) VALUES (?, ?, ?, ?)",
            (q.pack, q.lesson, q.how, ts(q.at)),
        )
        added["quiz_lessons"] += cur.rowcount
    for name, value in doc.settings.items():
        c.execute("INSERT OR IGNORE INTO settings (name, value) VALUES (?, ?)", (name, json.dumps(value)))
    return added


def _merge_reviews(c: sqlite3.Connection, doc: ExportDoc) -> tuple[int, int]:
    """Add the export's reviews (by uid) and the schedules of cards new here; a card reviewed
    on both sides is rescheduled by replaying the merged log. (reviews, cards) added."""
    reviews = cards = 0
    touched: set[Key] = set()
    for r in doc.reviews:
        cur = c.execute(
            "INSERT OR IGNORE INTO reviews (uid, pack, item, rating, correct, at, duration_ms, content_hash) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (r.uid, r.pack, r.item, r.rating, int(r.correct), ts(r.at), r.duration_ms, r.content_hash),
        )
        if cur.rowcount:
            reviews += 1
            touched.add((r.pack, r.item))
    retention = read_settings(c).desired_retention
    for card in doc.cards:
        key = (card.pack, card.item)
        row = c.execute(CARD_SELECT + " WHERE pack = ? AND item = ?", key).fetchone()
        if row is None:
            upsert_card(c, card.to_state())
            cards += 1
        elif key in touched:
            upsert_card(c, _replay(c, card_from_row(row), card.to_state(), retention))
    return reviews, cards


def _card_dict(s: CardState) -> dict:
    return {
        "pack": s.pack,
        "item": s.item,
        "state": int(s.state),
        "step": s.step,
        "stability": s.stability,
        "difficulty": s.difficulty,
        "due": ts(s.due),
        "last_review": ts(s.last_review),
        "first_review": ts(s.first_review),
        "reps": s.reps,
        "lapses": s.lapses,
        "content_hash": s.content_hash,
    }


def _replay(c: sqlite3.Connection, local: CardState, imported: CardState, retention: float) -> CardState:
    """A card reviewed on two machines: replay the merged review log in time order.

    Without fuzz, so replaying the same log always gives the same schedule.
    """
    rows = c.execute(
        "SELECT correct, at, content_hash FROM reviews WHERE pack = ? AND item = ? ORDER BY at, id",
        (local.pack, local.item),
    ).fetchall()
    sched = scheduler(retention, fuzz=False)
    card = Card(card_id=0, due=parse_ts(rows[0][1]))
    lapses = 0
    content_hash = None
    for correct, at, h in rows:
        card, _ = sched.review_card(card, rating_for(bool(correct)), review_datetime=parse_ts(at))
        lapses += 0 if correct else 1
        content_hash = h or content_hash
    return CardState(
        pack=local.pack,
        item=local.item,
        state=card.state,
        step=card.step,
        stability=card.stability,
        difficulty=card.difficulty,
        due=card.due,
        last_review=card.last_review,
        first_review=min(local.first_review, imported.first_review),
        reps=len(rows),
        lapses=lapses,
        content_hash=content_hash or local.content_hash,
    )
