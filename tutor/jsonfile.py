"""Small JSON files in the data dir, written so a kill never leaves half of one."""

from __future__ import annotations

import json
from pathlib import Path

from tutor.files import Unreadable, read_bounded, write_atomic

# A settings or trust file is a few kilobytes; anything far larger is not ours.
MAX_BYTES = 8 << 20


def read_json(path: Path) -> object:
    """The file's JSON, or None when it is missing, unreadable, too large or not JSON."""
    try:
        return json.loads(read_bounded(path, MAX_BYTES).decode("utf-8"))
    except (Unreadable, ValueError, RecursionError):
        return None


def write_json(path: Path, data: object) -> None:
    write_atomic(path, json.dumps(data, indent=1, sort_keys=True))
