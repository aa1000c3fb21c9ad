"""Read-only progress summaries for commands that must not change anything (``list``)."""

from __future__ import annotations

import os
import sqlite3

from tutor.progress.database import FILENAME, connect_readonly


def _read_only(data_dir: str | os.PathLike | None) -> sqlite3.Connection | None:
    from tutor.paths import data_dir as resolve

    path = resolve(data_dir) / FILENAME
    if not path.is_file():
        return None
    try:
        return connect_readonly(path)
    except sqlite3.Error:
        return None


def language_setting(data_dir: str | os.PathLike | None = None) -> str | None:
    """The learner's ``language`` setting (which translation of a pack to show), read-only;
    None when unset or unreadable."""
    from tutor.progress.settings import read_settings

    conn = _read_only(data_dir)
    if conn is None:
        return None
    try:
        return read_settings(conn).language or None
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def exercise_statuses(data_dir: str | os.PathLike | None = None) -> dict[str, str]:
    """'PACK:LESSON/EXERCISE' -> 'passed' | 'attempted'; {} when there is no readable store.

    Opened read-only and never created, migrated or moved aside: ``list`` only looks. A
    damaged file is reported by the next command that writes (quiz, the app).
    """
    conn = _read_only(data_dir)
    if conn is None:
        return {}
    try:
        rows = conn.execute("SELECT pack, item, max(passed) FROM attempts GROUP BY pack, item").fetchall()
    except sqlite3.Error:
        return {}
    finally:
        conn.close()
    return {f"{pack}:{item}": "passed" if passed else "attempted" for pack, item, passed in rows}
