"""Problem-free lessons remembered between loads, keyed by the bytes they were built from.

Like CPython's checked-hash .pyc files: a lesson whose lesson.yaml and every file it
references hash as they did when it last loaded without a problem is rebuilt from the
plain data it produced, without composing YAML or parsing its Python again (those two
are nearly all of a load). Pydantic still validates that data on every load. The key also
covers the loader's own source and the Python and pydantic versions, so a changed
validator revalidates everything. Lessons with problems are never remembered, so they are
reported in full every time. Any trouble reading or writing the cache only means loading
the slow way: the cache is never a reason for a load to fail.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import time
from functools import lru_cache
from pathlib import Path

from tutor.files import write_atomic
from tutor.packs.problems import Pos

STALE_AFTER_S = 30 * 24 * 3600  # the cache of a pack folder unused this long is deleted
# The modules whose code decides what a lesson loads to and which problems it has.
_SOURCES = ("loader.py", "models.py", "validate.py", "yamlsrc.py", "problems.py", "cache.py")


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


@lru_cache(maxsize=1)
def fingerprint() -> str:
    import pydantic

    h = hashlib.blake2b(digest_size=16)
    h.update(f"{sys.version}|{pydantic.VERSION}".encode())
    here = Path(__file__).parent
    for name in _SOURCES:
        h.update((here / name).read_bytes())
    return h.hexdigest()


class LessonCache:
    """The remembered lessons of one pack folder, in one file under ``directory``."""

    def __init__(self, root: Path, directory: Path):
        # Positions keep paths as given, so a relative root is only the same pack from the same folder.
        where = f"{root}|{root.resolve()}" if root.is_absolute() else f"{Path.cwd()}|{root}|{root.resolve()}"
        self.file = directory / "packs" / f"{digest(where.encode())}.pickle"
        self._entries: dict[str, dict] = {}
        self._used: set[str] = set()
        self._changed = False
        try:
            with open(self.file, "rb") as f:
                stored = pickle.load(f)
            if stored.get("fingerprint") == fingerprint() and stored.get("where") == where:
                self._entries = stored["lessons"]
        except Exception:  # missing, unreadable, corrupt, from another version: start empty
            self._entries = {}
        self._where = where

    def lesson(self, lesson_id: str) -> tuple[object, dict[tuple, Pos]] | None:
        """The resolved data and origins remembered for this lesson, if its files are unchanged."""
        try:
            entry = self._entries.get(lesson_id)
            if entry is None:
                return None
            for name, expected in entry["files"]:
                if digest(Path(name).read_bytes()) != expected:
                    return None
            paths = [Path(name) for name in entry["paths"]]  # one Path per file, not per value
            origins = {key: Pos(paths[i], line, col) for key, i, line, col in entry["origins"]}
        except (OSError, LookupError, TypeError, ValueError, AttributeError):
            return None  # a file gone or unreadable, or an entry not as this code writes them
        self._used.add(lesson_id)
        return entry["data"], origins

    def remember(self, lesson_id: str, data: object, origins: dict[tuple, Pos], files: list[tuple[Path, str]]) -> None:
        index: dict[Path, int] = {}
        for pos in origins.values():
            index.setdefault(pos.file, len(index))
        self._entries[lesson_id] = {
            "files": [(str(path), h) for path, h in files],
            "data": data,
            "paths": [str(path) for path in index],
            "origins": [(key, index[pos.file], pos.line, pos.col) for key, pos in origins.items()],
        }
        self._used.add(lesson_id)
        self._changed = True

    def save(self, *, prune: bool = True) -> None:
        """Write the entries this load used; ``prune``: the load read the whole pack, so the
        entries it did not use are lessons gone from the pack, dropped. A load of single
        lessons (the app's, as they are opened) keeps the others."""
        if not self._changed and (not prune or self._used == set(self._entries)):
            try:
                os.utime(self.file)  # still in use: keep it from looking stale
            except OSError:
                pass
            return
        lessons = {k: v for k, v in self._entries.items() if k in self._used or not prune}
        try:
            data = {"fingerprint": fingerprint(), "where": self._where, "lessons": lessons}
            write_atomic(self.file, pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL))
            self._forget_stale()
        except Exception:
            pass  # a read-only or full disk: the next load is just slower

    def _forget_stale(self) -> None:
        """Delete the caches of pack folders not loaded for a month (deleted or moved packs)."""
        cutoff = time.time() - STALE_AFTER_S
        for other in self.file.parent.glob("*.pickle"):
            try:
                if other.stat().st_mtime < cutoff:
                    other.unlink()
            except OSError:
                pass


def open_cache(root: Path) -> LessonCache | None:
    from tutor.paths import cache_dir

    try:
        return LessonCache(root, cache_dir())
    except Exception:  # e.g. an unresolvable path or a broken platformdirs: no cache
        return None
