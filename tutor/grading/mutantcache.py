"""What ``pack test`` has proven about mutants, so the next run need not prove it again.

Only proofs are kept: a mutant the checks killed (keyed by a digest of the exercise, the
mutant's source, the tutor and its check library, and torch's version) and the values the
reference computed for the literal operator (keyed by the exercise and the versions). A
survivor is never cached: it runs again until a check kills it or it is declared
equivalent. One JSON file beside packtimes.py's; safe to delete.
"""

from __future__ import annotations

import hashlib
import json
import logging
from functools import cache
from importlib import metadata
from pathlib import Path

from tutor.files import Unreadable, read_json_file, write_atomic
from tutor.paths import cache_dir

log = logging.getLogger("tutor.grading")

FILENAME = "mutants.json"
MAX_BYTES = 16 << 20  # larger is not ours: ignored (and replaced)
MAX_DEPTH = 64  # a value's nested lists are a tensor's dimensions
MAX_KILLS = 200_000  # the oldest proofs go first beyond this


def default_path() -> Path:
    return cache_dir() / "pack-test" / FILENAME


@cache
def versions() -> str:
    """The tutor, its check library's source (what decides a kill) and torch, read without importing torch."""
    import tutor
    from tutor.engine.inject import checks_digest_now

    try:
        torch = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch = "none"
    return f"{tutor.__version__}/{checks_digest_now()}/{torch}"


def key(exercise: dict, *parts: str) -> str:
    blob = json.dumps(exercise, sort_keys=True, default=str)
    return hashlib.sha256("\0".join([versions(), blob, *parts]).encode()).hexdigest()


class MutantCache:
    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_path()
        self.kills: dict[str, None] = {}  # ordered: oldest first
        self.values: dict[str, dict] = {}
        self.changed = False
        try:
            data = read_json_file(self.path, max_bytes=MAX_BYTES, max_depth=MAX_DEPTH)
        except Unreadable:
            data = None  # no cache, or not ours: start empty
        if isinstance(data, dict):
            kills = data.get("kills", [])
            self.kills = dict.fromkeys(k for k in kills if isinstance(k, str)) if isinstance(kills, list) else {}
            values = data.get("values", {})
            self.values = {k: v for k, v in values.items() if isinstance(v, dict)} if isinstance(values, dict) else {}

    def killed(self, k: str) -> bool:
        return k in self.kills

    def add_kill(self, k: str) -> None:
        if k not in self.kills:
            self.kills[k] = None
            self.changed = True

    def add_values(self, k: str, values: dict) -> None:
        self.values[k] = values
        self.changed = True

    def save(self) -> None:
        if not self.changed:
            return
        kills = list(self.kills)[-MAX_KILLS:]
        values = dict(list(self.values.items())[-MAX_KILLS // 100 :])
        try:
            write_atomic(self.path, json.dumps({"kills": kills, "values": values}))
        except OSError as exc:  # a read-only cache costs only the time to prove again
            log.debug("mutant cache not saved: %s", exc)
