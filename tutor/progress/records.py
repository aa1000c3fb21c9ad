"""The records the progress store keeps, and how each is read from and written to its row.

Standard library and ``fsrs`` only, like the store. Times are stored as fixed-width UTC
text (:func:`ts`), so text order is time order.
"""

from __future__ import annotations

import sqlite3
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import overload

from fsrs import State

from tutor.progress.scheduling import CardState, utc

Key = tuple[str, str]  # (pack id, "LESSON/ITEM")


def ts(dt: datetime | None) -> str | None:
    """A datetime as fixed-width UTC text (text order == time order)."""
    if dt is None:
        return None
    return utc(dt).isoformat(timespec="microseconds")


@overload
def parse_ts(text: str) -> datetime: ...
@overload
def parse_ts(text: None) -> None: ...
@overload
def parse_ts(text: str | None) -> datetime | None: ...
def parse_ts(text: str | None) -> datetime | None:
    return None if text is None else utc(datetime.fromisoformat(text))


@dataclass(frozen=True)
class Attempt:
    id: int
    uid: str
    pack: str
    item: str
    passed: bool
    at: datetime
    code: str
    content_hash: str


@dataclass(frozen=True)
class Draft:
    code: str
    updated_at: datetime
    content_hash: str | None


@dataclass(frozen=True)
class Position:
    pack: str
    lesson: str
    exercise: str | None
    updated_at: datetime


@dataclass(frozen=True)
class Review:
    uid: str
    pack: str
    item: str
    rating: int
    correct: bool
    at: datetime
    duration_ms: int | None
    content_hash: str | None


@dataclass(frozen=True)
class ExerciseStats:
    attempts: int
    passed: bool
    last_at: datetime
    content_hash: str  # of the latest attempt


@dataclass(frozen=True)
class DueCards:
    """What a quiz may ask now: ``due`` (most overdue first) then ``new`` (given order)."""

    due: list[Key]
    new: list[Key]
    new_today: int  # new cards already started today (local calendar day)
    new_allowed: int  # how many more new cards today's limit allows
    unopened: int = 0  # never-seen cards held back: their lessons are not in the quiz yet


# Why a lesson's cards are in the quiz: the app showed the lesson, `quiz --lesson` named it,
# or the learner added its cards by hand.
QUIZ_LESSON_REASONS = ("opened", "named", "added")


def lesson_of(item: str) -> str:
    """The lesson part of an item key ``"LESSON/ITEM"``."""
    return item.split("/", 1)[0]


CARD_SELECT = (
    "SELECT pack, item, state, step, stability, difficulty, due, last_review, first_review, reps, lapses, "
    "content_hash FROM cards"
)
REVIEW_SELECT = "SELECT uid, pack, item, rating, correct, at, duration_ms, content_hash FROM reviews"


def new_uid() -> str:
    """The id an attempt or review keeps across exports and imports."""
    return uuid.uuid4().hex


def card_from_row(r: tuple) -> CardState:
    return CardState(
        pack=r[0],
        item=r[1],
        state=State(r[2]),
        step=r[3],
        stability=r[4],
        difficulty=r[5],
        due=parse_ts(r[6]),
        last_review=parse_ts(r[7]),
        first_review=parse_ts(r[8]),
        reps=r[9],
        lapses=r[10],
        content_hash=r[11],
    )


def upsert_card(c: sqlite3.Connection, s: CardState) -> None:
    c.execute(
        "INSERT INTO cards (pack, item, state, step, stability, difficulty, due, last_review, first_review, "
        "reps, lapses, content_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (pack, item) DO UPDATE SET state = excluded.state, step = excluded.step, "
        "stability = excluded.stability, difficulty = excluded.difficulty, due = excluded.due, "
        "last_review = excluded.last_review, first_review = excluded.first_review, reps = excluded.reps, "
        "lapses = excluded.lapses, content_hash = excluded.content_hash",
        (
            s.pack,
            s.item,
            int(s.state),
            s.step,
            s.stability,
            s.difficulty,
            ts(s.due),
            ts(s.last_review),
            ts(s.first_review),
            s.reps,
            s.lapses,
            s.content_hash,
        ),
    )


def review_from_row(r: tuple) -> Review:
    return Review(r[0], r[1], r[2], r[3], bool(r[4]), parse_ts(r[5]), r[6], r[7])
