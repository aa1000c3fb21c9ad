"""The learner's progress: attempts, hints, drafts, card schedules and reviews, last
position, settings, and which lessons' cards are in the quiz.

Pack content is addressed by pack id plus item key ``"LESSON/ITEM"``; every record keeps
the content hash of the item it was made against, so changed items can be noticed.

Only the standard library and ``fsrs`` are imported here (writers in tests start as
fresh processes; the app calls this from worker threads). The file, its transactions and
its durability are database.py's; the records and their rows records.py's; the export
format transfer.py's, imported only to export or import.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from fsrs import Card

from tutor.errors import TutorError
from tutor.progress.database import FILENAME, Database
from tutor.progress.records import (
    CARD_SELECT,
    QUIZ_LESSON_REASONS,
    REVIEW_SELECT,
    Attempt,
    Draft,
    DueCards,
    ExerciseStats,
    Key,
    Position,
    Review,
    card_from_row,
    lesson_of,
    new_uid,
    parse_ts,
    review_from_row,
    ts,
    upsert_card,
)
from tutor.progress.scheduling import CardState, rating_for, scheduler, utc
from tutor.progress.settings import Settings, read_settings, validate_setting

# How long a quiz session's claim on a card lasts: longer than answering one card takes,
# short enough that a crashed session's cards come back soon.
CLAIM_LEASE = timedelta(minutes=5)


class ProgressStore(Database):
    """``ProgressStore(path)`` opens (creating or upgrading) the database at ``path``; see
    :class:`~tutor.progress.database.Database` for what happens to a damaged file."""

    def __init__(
        self, path: str | os.PathLike, *, busy_timeout: float = 30.0, fuzz: bool = True, readonly: bool = False
    ):
        self._fuzz = fuzz  # fsrs interval fuzz; tests turn it off for exact schedules
        super().__init__(path, busy_timeout=busy_timeout, readonly=readonly)

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
                (new_uid(), pack, item, int(bool(passed)), ts(utc(at)), code, content_hash),
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
            return read_settings(self._conn)

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
            return read_settings(c)

    # ------------------------------------------------------------ cards

    def card_state(self, pack: str, item: str) -> CardState | None:
        with self._lock:
            row = self._conn.execute(CARD_SELECT + " WHERE pack = ? AND item = ?", (pack, item)).fetchone()
        return None if row is None else card_from_row(row)

    def card_states(self, pack: str | None = None) -> dict[Key, CardState]:
        with self._lock:
            if pack is None:
                rows = self._conn.execute(CARD_SELECT).fetchall()
            else:
                rows = self._conn.execute(CARD_SELECT + " WHERE pack = ?", (pack,)).fetchall()
        return {(r[0], r[1]): card_from_row(r) for r in rows}

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
            row = c.execute(CARD_SELECT + " WHERE pack = ? AND item = ?", (pack, item)).fetchone()
            old = None if row is None else card_from_row(row)
            card = Card(card_id=0, due=now) if old is None else old.fsrs_card()
            settings = read_settings(c)
            sched = scheduler(settings.desired_retention, fuzz=self._fuzz, parameters=settings.fsrs_parameters)
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
            upsert_card(c, state)
            c.execute("DELETE FROM card_claims WHERE pack = ? AND item = ?", (pack, item))  # answered: free
            c.execute(
                "INSERT INTO reviews (uid, pack, item, rating, correct, at, duration_ms, content_hash) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    new_uid(),
                    pack,
                    item,
                    int(rating_for(correct)),
                    int(bool(correct)),
                    ts(now),
                    duration_ms,
                    content_hash,
                ),
            )
        return state

    def reviews_for(self, pack: str, item: str) -> list[Review]:
        with self._lock:
            rows = self._conn.execute(
                REVIEW_SELECT + " WHERE pack = ? AND item = ? ORDER BY at, id", (pack, item)
            ).fetchall()
        return [review_from_row(r) for r in rows]

    def reviews(self) -> list[Review]:
        """Every review logged, oldest first (the Anki export's history, the optimizer's log)."""
        with self._lock:
            rows = self._conn.execute(REVIEW_SELECT + " ORDER BY at, id").fetchall()
        return [review_from_row(r) for r in rows]

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
            limit = read_settings(c).new_cards_per_day if new_limit is None else max(0, int(new_limit))
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

    # ------------------------------------------------------------ claims: one queue for every session

    def claim_card(
        self, pack: str, item: str, session: str, now: datetime | None = None, *, lease: timedelta = CLAIM_LEASE
    ) -> bool:
        """Reserve a card for quiz session ``session`` before it is shown; False when another
        session's claim on it is still live, or it is no longer due at ``now`` (answered in
        another session since the queue was drawn). One transaction, so two sessions never
        both win. :meth:`review` frees the card; :meth:`release_claims` the rest."""
        now_text = ts(utc(now))
        with self._write() as c:
            c.execute("DELETE FROM card_claims WHERE expires <= ?", (now_text,))
            holder = c.execute("SELECT session FROM card_claims WHERE pack = ? AND item = ?", (pack, item)).fetchone()
            if holder is not None and holder[0] != session:
                return False
            due = c.execute("SELECT due FROM cards WHERE pack = ? AND item = ?", (pack, item)).fetchone()
            if due is not None and due[0] > now_text:
                return False
            c.execute(
                "INSERT OR REPLACE INTO card_claims (pack, item, session, expires) VALUES (?, ?, ?, ?)",
                (pack, item, session, ts(utc(now) + lease)),
            )
            return True

    def release_claims(self, session: str) -> None:
        """Free every card ``session`` still holds (it ended, or stopped before answering)."""
        with self._write() as c:
            c.execute("DELETE FROM card_claims WHERE session = ?", (session,))

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
        from tutor.progress.transfer import export_rows

        with self._read() as c:
            return export_rows(c)

    def import_(self, data: object) -> dict[str, int]:
        """Merge an export into this store; returns how many records were added per kind.

        The whole document is validated first (ValueError with one sentence, nothing
        written); then everything is written in one transaction (see
        :func:`tutor.progress.transfer.import_rows` for how records are merged).
        """
        from tutor.progress.transfer import ExportDoc, import_rows, validate

        doc = data if isinstance(data, ExportDoc) else validate(data)  # ValueError before anything is written
        with self._write() as c:
            return import_rows(c, doc)
