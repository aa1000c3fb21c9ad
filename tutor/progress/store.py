"""The learner's progress in one SQLite file: attempts, hints, drafts, card schedules and
reviews, last position, settings.

Durability (docs/architecture.md, "Reliability"): WAL journal, ``synchronous=FULL``, every write a single
``BEGIN IMMEDIATE`` transaction, and a busy timeout so two processes writing at once
wait for each other instead of failing. A kill -9 at any moment loses nothing committed:
SQLite rolls an interrupted transaction back on the next open.

Pack content is addressed by pack id plus item key ``"LESSON/ITEM"``; every record keeps
the content hash of the item it was made against, so changed items can be noticed.

Only the standard library and ``fsrs`` are imported here (writers in tests start as
fresh processes; the app calls this from worker threads). One connection is shared by
all threads, serialised by a lock.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, overload

from fsrs import Card, State

from tutor.errors import TutorError
from tutor.progress import schema
from tutor.progress.scheduling import (
    CardState,
    rating_for,
    scheduler,
    utc,
)
from tutor.progress.settings import Settings, validate_setting

FILENAME = "progress.sqlite3"

Key = tuple[str, str]  # (pack id, "LESSON/ITEM")

# SQLite result codes that mean the file itself is damaged (not merely busy or locked).
_SQLITE_CORRUPT = 11
_SQLITE_NOTADB = 26


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


# ---------------------------------------------------------------- records


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


class CorruptDatabase(Exception):
    """Internal: the file is not a usable database."""


class _Busy(Exception):
    """Internal: another connection held a lock the busy handler does not wait for."""


def _is_busy(exc: sqlite3.DatabaseError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED (and their extended codes)
    text = str(exc).lower()
    return "locked" in text or "busy" in text


# ---------------------------------------------------------------- the store


class ProgressStore:
    """``ProgressStore(path)`` opens (creating or upgrading) the database at ``path``.

    If the file is damaged it is moved aside and a fresh one started; ``notice`` then holds
    one sentence to show the learner (None otherwise).
    """

    def __init__(self, path: str | os.PathLike, *, busy_timeout: float = 30.0, fuzz: bool = True):
        self.path = Path(path)
        self.notice: str | None = None
        self._busy_timeout = busy_timeout
        self._fuzz = fuzz  # fsrs interval fuzz; tests turn it off for exact schedules
        self._lock = threading.RLock()
        self._conn = self._open()

    @classmethod
    def open(cls, data_dir: str | os.PathLike | None = None, **kwargs: Any) -> ProgressStore:
        """The store in the learner's data dir (``--data-dir``, $PTFUND_TUTOR_HOME, platform)."""
        from tutor.paths import data_dir as resolve

        directory = resolve(data_dir)
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise TutorError(f"cannot create the data dir {directory}: {exc.strerror or exc}") from None
        return cls(directory / FILENAME, **kwargs)

    # ------------------------------------------------------------ opening

    def _open(self) -> sqlite3.Connection:
        # A few tries: another process may be moving the same damaged file aside.
        for _ in range(3):
            identity = _file_identity(self.path)
            try:
                return self._connect_patiently()
            except CorruptDatabase as exc:
                self._move_aside(identity, str(exc))
        return self._connect_patiently()

    def _connect_patiently(self) -> sqlite3.Connection:
        """Connect, waiting out another process that is creating or upgrading the file.

        SQLite's busy handler does not cover every lock on the way in: switching a new
        file to WAL while a second process does the same can fail at once with "database
        is locked". Such a failure is retried until the busy timeout, like any other wait.
        """
        deadline = time.monotonic() + self._busy_timeout
        delay = 0.005
        while True:
            try:
                return self._connect()
            except _Busy:
                if time.monotonic() >= deadline:
                    raise TutorError(
                        f"cannot open the progress database {self.path}: another process keeps it locked"
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.2)

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self.path, timeout=self._busy_timeout, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise TutorError(f"cannot open the progress database {self.path}: {exc}") from None
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000):d}")
            conn.execute("PRAGMA journal_mode = WAL")
            # FULL: a commit is on disk before it returns (NORMAL could lose the last
            # commits on power loss; a kill -9 alone is safe either way).
            conn.execute("PRAGMA synchronous = FULL")
            rows = conn.execute("PRAGMA integrity_check").fetchall()
            if rows != [("ok",)]:
                raise CorruptDatabase("integrity check failed: " + "; ".join(str(r[0]) for r in rows[:3]))
            self._migrate(conn)
            return conn
        except sqlite3.DatabaseError as exc:
            conn.close()
            # Only damage moves the file aside; busy, locked, I/O errors never do.
            if _is_damage(exc):
                raise CorruptDatabase(str(exc)) from None
            if _is_busy(exc):
                raise _Busy() from None
            raise TutorError(f"cannot open the progress database {self.path}: {exc}") from None
        except BaseException:
            conn.close()
            raise

    def _migrate(self, conn: sqlite3.Connection) -> None:
        if schema.user_version(conn) == schema.SCHEMA_VERSION:
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = schema.user_version(conn)  # again, under the write lock
            if version > schema.SCHEMA_VERSION:
                raise TutorError(
                    f"the progress database {self.path} was written by a newer ptfund-tutor "
                    f"(schema {version}, this one knows {schema.SCHEMA_VERSION}); upgrade ptfund-tutor to use it"
                )
            schema.apply(conn)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _move_aside(self, identity: tuple[int, int] | None, reason: str) -> None:
        # Only move the file we found damaged: if another process already replaced it with a
        # fresh database, leave that one alone.
        if identity is None or _file_identity(self.path) != identity:
            return
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        n = 1
        while target.exists():
            target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}-{n}")
            n += 1
        try:
            os.rename(self.path, target)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise TutorError(
                f"the progress database {self.path} is damaged and could not be moved aside: {exc}"
            ) from None
        # The WAL belongs to the damaged file: a fresh database must never replay it.
        wal = Path(f"{self.path}-wal")
        if wal.exists():
            try:
                os.rename(wal, f"{target}-wal")
            except OSError:
                wal.unlink(missing_ok=True)
        Path(f"{self.path}-shm").unlink(missing_ok=True)
        self.notice = (
            f"Your progress database was damaged ({reason}), so it was moved to {target} and a fresh one was started."
        )

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> ProgressStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ transactions

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction. IMMEDIATE takes the write lock up front: a deferred
        transaction that later needs it can fail with SQLITE_BUSY without waiting."""
        with self._lock:
            conn = self._conn
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
            except sqlite3.OperationalError as exc:
                # Disk full, read-only file, another process holding the lock past the
                # busy timeout: the learner's problem to fix, so one sentence, no traceback.
                raise TutorError(f"could not save progress to {self.path}: {exc}") from None
            except sqlite3.DatabaseError as exc:
                if _is_damage(exc):
                    raise TutorError(
                        f"the progress database {self.path} is damaged ({exc}); the next start moves it aside "
                        "and starts a fresh one"
                    ) from None
                raise

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """A consistent snapshot for reads of several statements."""
        with self._lock:
            conn = self._conn
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")

    # ------------------------------------------------------------ exercises

    def record_attempt(
        self,
        pack: str,
        item: str,
        *,
        passed: bool,
        code: str,
        content_hash: str,
        at: datetime | None = None,
    ) -> int:
        """Store one run of an exercise's checks; returns the attempt's id."""
        with self._write() as c:
            cur = c.execute(
                "INSERT INTO attempts (uid, pack, item, passed, at, code, content_hash) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (_uid(), pack, item, int(bool(passed)), ts(utc(at)), code, content_hash),
            )
            assert cur.lastrowid is not None  # set by every INSERT
            return cur.lastrowid

    def attempts_for(self, pack: str, item: str) -> list[Attempt]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT id, uid, pack, item, passed, at, code, content_hash FROM attempts "
                "WHERE pack = ? AND item = ? ORDER BY at, id",
                (pack, item),
            ).fetchall()
        return [Attempt(r[0], r[1], r[2], r[3], bool(r[4]), parse_ts(r[5]), r[6], r[7]) for r in rows]

    def exercise_stats(self, pack: str | None = None) -> dict[Key, ExerciseStats]:
        """Per exercise: number of attempts, whether any passed, the latest attempt."""
        sql = (
            "SELECT pack, item, count(*), max(passed), max(at), "
            "(SELECT content_hash FROM attempts b WHERE b.pack = a.pack AND b.item = a.item ORDER BY at DESC, id DESC LIMIT 1) "
            "FROM attempts a {where} GROUP BY pack, item"
        )
        with self._lock:
            if pack is None:
                rows = self._conn.execute(sql.format(where="")).fetchall()
            else:
                rows = self._conn.execute(sql.format(where="WHERE pack = ?"), (pack,)).fetchall()
        return {(r[0], r[1]): ExerciseStats(r[2], bool(r[3]), parse_ts(r[4]), r[5]) for r in rows}

    def record_hint(
        self, pack: str, item: str, hint: int, *, content_hash: str | None = None, at: datetime | None = None
    ) -> None:
        """Note that hint number ``hint`` (0-based) was revealed; repeating it is harmless."""
        with self._write() as c:
            c.execute(
                "INSERT OR IGNORE INTO hints (pack, item, hint, at, content_hash) VALUES (?, ?, ?, ?, ?)",
                (pack, item, int(hint), ts(utc(at)), content_hash),
            )

    def hints_used(self, pack: str, item: str) -> int:
        """How many hints of this exercise the learner has revealed."""
        with self._lock:
            return self._conn.execute(
                "SELECT count(*) FROM hints WHERE pack = ? AND item = ?", (pack, item)
            ).fetchone()[0]

    def save_draft(
        self, pack: str, item: str, code: str, *, content_hash: str | None = None, at: datetime | None = None
    ) -> None:
        """Keep the latest code of an exercise (the app calls this, debounced, on every change)."""
        with self._write() as c:
            c.execute(
                "INSERT INTO drafts (pack, item, code, updated_at, content_hash) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (pack, item) DO UPDATE SET code = excluded.code, "
                "updated_at = excluded.updated_at, content_hash = excluded.content_hash",
                (pack, item, code, ts(utc(at)), content_hash),
            )

    def load_draft(self, pack: str, item: str) -> Draft | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT code, updated_at, content_hash FROM drafts WHERE pack = ? AND item = ?", (pack, item)
            ).fetchone()
        return None if row is None else Draft(row[0], parse_ts(row[1]), row[2])

    def delete_draft(self, pack: str, item: str) -> None:
        with self._write() as c:
            c.execute("DELETE FROM drafts WHERE pack = ? AND item = ?", (pack, item))

    # ------------------------------------------------------------ position and settings

    def set_position(self, pack: str, lesson: str, exercise: str | None = None, *, at: datetime | None = None) -> None:
        with self._write() as c:
            c.execute(
                "INSERT INTO position (id, pack, lesson, exercise, updated_at) VALUES (1, ?, ?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET pack = excluded.pack, lesson = excluded.lesson, "
                "exercise = excluded.exercise, updated_at = excluded.updated_at",
                (pack, lesson, exercise, ts(utc(at))),
            )

    def position(self) -> Position | None:
        with self._lock:
            row = self._conn.execute("SELECT pack, lesson, exercise, updated_at FROM position WHERE id = 1").fetchone()
        return None if row is None else Position(row[0], row[1], row[2], parse_ts(row[3]))

    def settings(self) -> Settings:
        with self._lock:
            return _settings(self._conn)

    def update_settings(self, **values: object) -> Settings:
        """Set ``desired_retention`` (0.7-0.99) and/or ``new_cards_per_day``; ValueError if invalid."""
        checked = {name: validate_setting(name, value) for name, value in values.items()}
        with self._write() as c:
            for name, value in checked.items():
                c.execute(
                    "INSERT INTO settings (name, value) VALUES (?, ?) "
                    "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                    (name, json.dumps(value)),
                )
            return _settings(c)

    # ------------------------------------------------------------ cards

    def card_state(self, pack: str, item: str) -> CardState | None:
        with self._lock:
            row = self._conn.execute(_CARD_SELECT + " WHERE pack = ? AND item = ?", (pack, item)).fetchone()
        return None if row is None else _card_state(row)

    def card_states(self, pack: str | None = None) -> dict[Key, CardState]:
        with self._lock:
            if pack is None:
                rows = self._conn.execute(_CARD_SELECT).fetchall()
            else:
                rows = self._conn.execute(_CARD_SELECT + " WHERE pack = ?", (pack,)).fetchall()
        return {(r[0], r[1]): _card_state(r) for r in rows}

    def review(
        self,
        pack: str,
        item: str,
        correct: bool,
        now: datetime | None = None,
        *,
        content_hash: str | None = None,
        duration_ms: int | None = None,
    ) -> CardState:
        """Schedule a card after an answer (wrong -> Again, right -> Good) and log the review.

        Returns the new state; ``.due`` is when it is next due, ``.leech`` whether it keeps
        being forgotten. Reviewing stores ``content_hash``, which clears "changed".
        """
        now = utc(now)
        with self._write() as c:
            row = c.execute(_CARD_SELECT + " WHERE pack = ? AND item = ?", (pack, item)).fetchone()
            old = None if row is None else _card_state(row)
            card = Card(card_id=0, due=now) if old is None else old.fsrs_card()
            sched = scheduler(_settings(c).desired_retention, fuzz=self._fuzz)
            card, _ = sched.review_card(card, rating_for(correct), review_datetime=now, review_duration=duration_ms)
            state = CardState(
                pack=pack,
                item=item,
                state=card.state,
                step=card.step,
                stability=card.stability,
                difficulty=card.difficulty,
                due=card.due,
                last_review=card.last_review,
                first_review=now if old is None else old.first_review,
                reps=(0 if old is None else old.reps) + 1,
                lapses=(0 if old is None else old.lapses) + (0 if correct else 1),
                content_hash=content_hash if content_hash is not None else (old.content_hash if old else None),
            )
            _upsert_card(c, state)
            c.execute(
                "INSERT INTO reviews (uid, pack, item, rating, correct, at, duration_ms, content_hash) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (_uid(), pack, item, int(rating_for(correct)), int(bool(correct)), ts(now), duration_ms, content_hash),
            )
        return state

    def reviews_for(self, pack: str, item: str) -> list[Review]:
        with self._lock:
            rows = self._conn.execute(
                _REVIEW_SELECT + " WHERE pack = ? AND item = ? ORDER BY at, id", (pack, item)
            ).fetchall()
        return [_review(r) for r in rows]

    def review_count(self) -> int:
        with self._lock:
            return self._conn.execute("SELECT count(*) FROM reviews").fetchone()[0]

    def due_cards(self, keys: Iterable[Key], now: datetime | None = None, new_limit: int | None = None) -> DueCards:
        """Of ``keys`` (the cards that exist now, in teaching order): those due at ``now``,
        most overdue first, then never-seen ones up to what today's new-card limit allows.

        New cards come only from the lessons in the quiz (:meth:`add_quiz_lesson`): a
        learner is never tested on a lesson they have not seen. ``new_limit`` overrides the
        ``new_cards_per_day`` setting. The day is the learner's local calendar day.
        """
        now = utc(now)
        keys = list(dict.fromkeys((str(p), str(i)) for p, i in keys))
        day_start = ts(now.astimezone().replace(hour=0, minute=0, second=0, microsecond=0))
        with self._read() as c:
            limit = _settings(c).new_cards_per_day if new_limit is None else max(0, int(new_limit))
            new_today = c.execute("SELECT count(*) FROM cards WHERE first_review >= ?", (day_start,)).fetchone()[0]
            due_at = {(r[0], r[1]): r[2] for r in c.execute("SELECT pack, item, due FROM cards")}
            in_quiz = {(r[0], r[1]) for r in c.execute("SELECT pack, lesson FROM quiz_lessons")}
        allowed = max(0, limit - new_today)
        now_text = ts(now)
        due = sorted((k for k in keys if k in due_at and due_at[k] <= now_text), key=lambda k: due_at[k])
        unseen = [k for k in keys if k not in due_at]
        new = [k for k in unseen if (k[0], lesson_of(k[1])) in in_quiz]
        return DueCards(
            due=due, new=new[:allowed], new_today=new_today, new_allowed=allowed, unopened=len(unseen) - len(new)
        )

    # ------------------------------------------------------------ lessons in the quiz

    def add_quiz_lesson(self, pack: str, lesson: str, how: str = "opened", *, at: datetime | None = None) -> bool:
        """Let the quiz draw new cards from this lesson; ``how`` is one of
        QUIZ_LESSON_REASONS. True when the lesson was not in the quiz before."""
        if how not in QUIZ_LESSON_REASONS:
            raise ValueError(f"how must be one of {', '.join(QUIZ_LESSON_REASONS)}")
        with self._write() as c:
            cur = c.execute(
                "INSERT OR IGNORE INTO quiz_lessons (pack, lesson, how, at) VALUES (?, ?, ?, ?)",
                (pack, lesson, how, ts(utc(at))),
            )
            return cur.rowcount > 0

    def quiz_lessons(self) -> dict[tuple[str, str], str]:
        """(pack, lesson) -> how it joined the quiz, in the order lessons joined."""
        with self._lock:
            rows = self._conn.execute("SELECT pack, lesson, how FROM quiz_lessons ORDER BY at, pack, lesson").fetchall()
        return {(r[0], r[1]): r[2] for r in rows}

    def next_due(self, keys: Iterable[Key] | None = None) -> datetime | None:
        """The earliest due time among scheduled cards (of ``keys`` when given)."""
        with self._lock:
            rows = self._conn.execute("SELECT pack, item, due FROM cards").fetchall()
        wanted = None if keys is None else {(str(p), str(i)) for p, i in keys}
        dues = [r[2] for r in rows if wanted is None or (r[0], r[1]) in wanted]
        return parse_ts(min(dues)) if dues else None

    # ------------------------------------------------------------ changed content

    def changed_items(self, current_hashes: Mapping[Key, str]) -> set[Key]:
        """Items whose content differs from what the learner last worked on.

        For a card that is the content it was last reviewed with; for an exercise, the
        latest attempt, or the draft if it is newer. Items without records are not
        "changed". A changed card keeps its history; the UI says it changed, and the next
        review records the new hash.
        """
        seen: dict[Key, tuple[str, str]] = {}  # key -> (time, hash); the newest wins

        def note(pack: str, item: str, at: str | None, h: str | None) -> None:
            if h is None:
                return
            k = (pack, item)
            if k not in seen or (at or "") >= seen[k][0]:
                seen[k] = (at or "", h)

        with self._read() as c:
            for r in c.execute("SELECT pack, item, last_review, content_hash FROM cards"):
                note(*r)
            for r in c.execute(
                "SELECT pack, item, at, content_hash FROM attempts a WHERE id = "
                "(SELECT id FROM attempts b WHERE b.pack = a.pack AND b.item = a.item ORDER BY at DESC, id DESC LIMIT 1)"
            ):
                note(*r)
            for r in c.execute("SELECT pack, item, updated_at, content_hash FROM drafts"):
                note(*r)
        return {k for k, (_, h) in seen.items() if k in current_hashes and current_hashes[k] != h}

    # ------------------------------------------------------------ export and import

    def export(self) -> dict:
        """Everything, as versioned JSON-ready data (``progress export``)."""
        from tutor.progress.transfer import FORMAT, VERSION

        with self._read() as c:
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
                for r in c.execute(
                    "SELECT uid, pack, item, passed, at, code, content_hash FROM attempts ORDER BY at, id"
                )
            ]
            hints = [
                {"pack": r[0], "item": r[1], "hint": r[2], "at": r[3], "content_hash": r[4]}
                for r in c.execute("SELECT pack, item, hint, at, content_hash FROM hints ORDER BY pack, item, hint")
            ]
            drafts = [
                {"pack": r[0], "item": r[1], "code": r[2], "updated_at": r[3], "content_hash": r[4]}
                for r in c.execute("SELECT pack, item, code, updated_at, content_hash FROM drafts ORDER BY pack, item")
            ]
            cards = [_card_dict(_card_state(r)) for r in c.execute(_CARD_SELECT + " ORDER BY pack, item")]
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
                for r in map(_review, c.execute(_REVIEW_SELECT + " ORDER BY at, id"))
            ]
            row = c.execute("SELECT pack, lesson, exercise, updated_at FROM position WHERE id = 1").fetchone()
            position = (
                None if row is None else {"pack": row[0], "lesson": row[1], "exercise": row[2], "updated_at": row[3]}
            )
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

    def import_(self, data: object) -> dict[str, int]:
        """Merge an export into this store; returns how many records were added per kind.

        The whole document is validated first (ValueError with one sentence, nothing
        written); then everything is written in one transaction. Importing the same file
        again adds nothing: attempts and reviews are matched by uid, hints by index;
        drafts and the position keep the newer; settings set here win. A card reviewed
        on both sides is rescheduled by replaying the merged review log.
        """
        from tutor.progress.transfer import validate

        doc = validate(data)  # raises ValueError before anything is written
        added = {"attempts": 0, "hints": 0, "drafts": 0, "reviews": 0, "cards": 0, "quiz_lessons": 0}
        with self._write() as c:
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
            touched: set[Key] = set()
            for r in doc.reviews:
                cur = c.execute(
                    "INSERT OR IGNORE INTO reviews (uid, pack, item, rating, correct, at, duration_ms, content_hash) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (r.uid, r.pack, r.item, r.rating, int(r.correct), ts(r.at), r.duration_ms, r.content_hash),
                )
                if cur.rowcount:
                    added["reviews"] += 1
                    touched.add((r.pack, r.item))
            retention = _settings(c).desired_retention
            for card in doc.cards:
                key = (card.pack, card.item)
                row = c.execute(_CARD_SELECT + " WHERE pack = ? AND item = ?", key).fetchone()
                if row is None:
                    _upsert_card(c, card.to_state())
                    added["cards"] += 1
                elif key in touched:
                    _upsert_card(c, _replay(c, _card_state(row), card.to_state(), retention))
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


# ---------------------------------------------------------------- helpers

_CARD_SELECT = (
    "SELECT pack, item, state, step, stability, difficulty, due, last_review, first_review, reps, lapses, "
    "content_hash FROM cards"
)
_REVIEW_SELECT = "SELECT uid, pack, item, rating, correct, at, duration_ms, content_hash FROM reviews"


def _uid() -> str:
    return uuid.uuid4().hex


def _is_damage(exc: sqlite3.DatabaseError) -> bool:
    """The file itself is broken (primary code CORRUPT or NOTADB), not merely busy."""
    return ((getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF) in (_SQLITE_CORRUPT, _SQLITE_NOTADB)


def _file_identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _settings(c: sqlite3.Connection) -> Settings:
    values: dict[str, Any] = {}
    for name, value in c.execute("SELECT name, value FROM settings"):
        try:
            values[name] = validate_setting(name, json.loads(value))
        except ValueError:
            continue  # an unknown or bad value falls back to the default
    return Settings(**values)


def _card_state(r: tuple) -> CardState:
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


def _upsert_card(c: sqlite3.Connection, s: CardState) -> None:
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


def _review(r: tuple) -> Review:
    return Review(r[0], r[1], r[2], r[3], bool(r[4]), parse_ts(r[5]), r[6], r[7])


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
