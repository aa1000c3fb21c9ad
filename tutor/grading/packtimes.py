"""How long each exercise of a pack took in its last ``pack test``, so that the next run
starts the slowest first (fewer workers idle at the end while one finishes a long one).

One small JSON file in the cache dir ($PTFUND_TUTOR_CACHE, or the platform's user cache
dir), keyed by the pack's folder; safe to delete. A missing or unreadable file only means
the pack's own order.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from tutor.files import Unreadable, read_bounded, write_atomic
from tutor.paths import cache_dir

log = logging.getLogger("tutor.grading")

FILENAME = "times.json"
MAX_BYTES = 1 << 20  # a file larger than this is not ours: ignored (and replaced)


def default_path() -> Path:
    return cache_dir() / "pack-test" / FILENAME


def _read(path: Path) -> dict:
    try:
        data = json.loads(read_bounded(path, MAX_BYTES))
    except (Unreadable, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def load(root: Path, path: Path | None = None) -> dict[str, float]:
    """{item: seconds} from the pack's last run (empty when there was none)."""
    entry = _read(path or default_path()).get(str(root.resolve()))
    if not isinstance(entry, dict):
        return {}
    return {str(k): float(v) for k, v in entry.items() if isinstance(v, (int, float)) and v >= 0}


def save(root: Path, times: dict[str, float], path: Path | None = None) -> None:
    """Record this run's times for the pack (other packs' entries are kept)."""
    path = path or default_path()
    data = _read(path)
    data[str(root.resolve())] = {k: round(v, 3) for k, v in times.items()}
    try:
        write_atomic(path, json.dumps(data))
    except OSError as exc:  # a read-only cache costs only the ordering
        log.debug("pack test times not saved: %s", exc)


def slowest_first(keys: list[str], times: dict[str, float]) -> list[int]:
    """Indexes of ``keys`` in the order to start them: unknown ones first (they may be
    slow), then by last time, slowest first; ties keep the pack's order."""
    return sorted(range(len(keys)), key=lambda i: -times.get(keys[i], float("inf")))
