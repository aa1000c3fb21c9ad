"""The progress database schema as forward migrations.

``MIGRATIONS[n]`` takes a database from ``user_version == n`` to ``n + 1``. Never edit a
step that has shipped: add a new one. Each step runs inside the caller's transaction
together with the ``user_version`` bump, so a kill mid-migration leaves the old version.

Times are ISO 8601 UTC text with microseconds (``2024-05-01T09:30:00.000000+00:00``):
fixed width, so text order is time order and SQL can compare them directly.
"""

from __future__ import annotations

import sqlite3

# v1: the first shipped schema. Kept verbatim so old databases upgrade step by step
# (tests create a v1 database from this list and open it with the current code).
V1 = [
    """
    CREATE TABLE attempts (
        id INTEGER PRIMARY KEY,
        pack TEXT NOT NULL,
        item TEXT NOT NULL,            -- "LESSON/EXERCISE"
        passed INTEGER NOT NULL,
        at TEXT NOT NULL,
        code TEXT NOT NULL,
        content_hash TEXT NOT NULL
    )
    """,
    "CREATE INDEX attempts_item ON attempts (pack, item)",
    """
    CREATE TABLE drafts (
        pack TEXT NOT NULL,
        item TEXT NOT NULL,
        code TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        content_hash TEXT,
        PRIMARY KEY (pack, item)
    )
    """,
    """
    CREATE TABLE cards (
        pack TEXT NOT NULL,
        item TEXT NOT NULL,            -- "LESSON/CARD"
        state INTEGER NOT NULL,        -- fsrs.State
        step INTEGER,
        stability REAL,
        difficulty REAL,
        due TEXT NOT NULL,
        last_review TEXT,
        first_review TEXT NOT NULL,    -- counts new cards per day
        reps INTEGER NOT NULL DEFAULT 0,
        lapses INTEGER NOT NULL DEFAULT 0,
        content_hash TEXT,             -- the card's content when last reviewed
        PRIMARY KEY (pack, item)
    )
    """,
    "CREATE INDEX cards_due ON cards (due)",
    """
    CREATE TABLE reviews (
        id INTEGER PRIMARY KEY,
        pack TEXT NOT NULL,
        item TEXT NOT NULL,
        rating INTEGER NOT NULL,       -- fsrs.Rating
        correct INTEGER NOT NULL,
        at TEXT NOT NULL,
        duration_ms INTEGER,
        content_hash TEXT
    )
    """,
    "CREATE INDEX reviews_item ON reviews (pack, item, at)",
    """
    CREATE TABLE position (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        pack TEXT NOT NULL,
        lesson TEXT NOT NULL,
        exercise TEXT,
        updated_at TEXT NOT NULL
    )
    """,
    "CREATE TABLE settings (name TEXT PRIMARY KEY, value TEXT NOT NULL)",  # values are JSON
]

# v2: hints used, and stable ids on attempts and reviews so `progress import` can merge
# the same file twice (or files from two machines) without duplicating anything.
V2 = [
    """
    CREATE TABLE hints (
        pack TEXT NOT NULL,
        item TEXT NOT NULL,
        hint INTEGER NOT NULL,         -- 0-based index of the revealed hint
        at TEXT NOT NULL,
        content_hash TEXT,
        PRIMARY KEY (pack, item, hint)
    )
    """,
    "ALTER TABLE attempts ADD COLUMN uid TEXT",
    "UPDATE attempts SET uid = lower(hex(randomblob(16))) WHERE uid IS NULL",
    "CREATE UNIQUE INDEX attempts_uid ON attempts (uid)",
    "ALTER TABLE reviews ADD COLUMN uid TEXT",
    "UPDATE reviews SET uid = lower(hex(randomblob(16))) WHERE uid IS NULL",
    "CREATE UNIQUE INDEX reviews_uid ON reviews (uid)",
]

# v3: the lessons the quiz may draw new cards from (the learner opened the lesson, named it
# with `quiz --lesson`, or added its cards by hand). Lessons already worked on count as opened.
V3 = [
    """
    CREATE TABLE quiz_lessons (
        pack TEXT NOT NULL,
        lesson TEXT NOT NULL,
        how TEXT NOT NULL,             -- opened, named or added: the first one is kept
        at TEXT NOT NULL,
        PRIMARY KEY (pack, lesson)
    )
    """,
    """
    INSERT OR IGNORE INTO quiz_lessons (pack, lesson, how, at)
    SELECT pack, lesson, 'opened', min(at) FROM (
        SELECT pack, substr(item, 1, instr(item, '/') - 1) AS lesson, at FROM attempts WHERE instr(item, '/') > 1
        UNION ALL
        SELECT pack, substr(item, 1, instr(item, '/') - 1), updated_at FROM drafts WHERE instr(item, '/') > 1
        UNION ALL
        SELECT pack, lesson, updated_at FROM position
    ) GROUP BY pack, lesson
    """,
]

# v4: cards claimed by a quiz session before they are shown, so two sessions on one data
# dir never ask the same card. A claim is a lease: it expires, so a crashed session frees
# its cards. Transient: never exported.
V4 = [
    """
    CREATE TABLE card_claims (
        pack TEXT NOT NULL,
        item TEXT NOT NULL,            -- "LESSON/CARD"
        session TEXT NOT NULL,         -- the quiz session holding it
        expires TEXT NOT NULL,
        PRIMARY KEY (pack, item)
    )
    """,
]

MIGRATIONS: list[list[str]] = [V1, V2, V3, V4]
SCHEMA_VERSION = len(MIGRATIONS)


def user_version(conn: sqlite3.Connection) -> int:
    return conn.execute("PRAGMA user_version").fetchone()[0]


def apply(conn: sqlite3.Connection, target: int = SCHEMA_VERSION) -> int:
    """Run the steps from the current version up to ``target``; returns the version before.

    The caller holds the write transaction (BEGIN IMMEDIATE), so two processes opening an
    old database at once migrate it exactly once: the second sees the new user_version.
    """
    before = user_version(conn)
    for version in range(before, target):
        for statement in MIGRATIONS[version]:
            conn.execute(statement)
        # PRAGMA cannot take parameters; the value is our own int.
        conn.execute(f"PRAGMA user_version = {version + 1:d}")
    return before
