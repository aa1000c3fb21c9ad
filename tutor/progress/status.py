"""Read-only progress summaries for commands that must not change anything (``list``)."""

from __future__ import annotations

import os
import sqlite3

from tutor.progress.database import FILENAME, connect_readonly


def exercise_statuses(data_dir: str | os.PathLike | None = None) -> dict[str, str]:
    """'PACK:LESSON/EXERCISE' -> 'passed' | 'attempted'; {} when there is no readable store.

    Opened read-only and never created, migrated or moved aside: ``list`` only looks. A
    damaged file is reported by the next command that writes (quiz, the app).
    """
    from tutor.paths import data_dir as resolve

    path = resolve(data_dir) / FILENAME
    if not path.is_file():
        return {}
    try:
        conn = connect_readonly(path)
    except sqlite3.Error:
        return {}
    try:
        rows = conn.execute("SELECT pack, item, max(passed) FROM attempts GROUP BY pack, item").fetchall()
    except sqlite3.Error:
        return {}
    finally:
        conn.close()
    return {f"{pack}:{item}": "passed" if passed else "attempted" for pack, item, passed in rows}
