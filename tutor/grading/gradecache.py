"""Verdicts ``grade`` already reached, so a rerun only verifies what changed.

One JSON line per verdict, appended as each one arrives: an interrupted run keeps all it
finished. The key covers everything a verdict depends on: the code's hash, the exercise
(its pack, the pack's version and the exercise's own content), the time limit, the device
and the tutor's version. Lives in ``grade/verdicts.jsonl`` under the cache dir
($PTFUND_TUTOR_CACHE, or the platform's user cache dir); safe to delete.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TextIO

from tutor import __version__
from tutor.grading.verdict import CheckLine, Verdict
from tutor.packs.catalog import ExerciseRef
from tutor.paths import cache_dir

FILENAME = "verdicts.jsonl"


def default_path() -> Path:
    return cache_dir() / "grade" / FILENAME


def verdict_key(ref: ExerciseRef, code: str, *, timeout: float | None, device: str | None) -> str:
    parts = [
        __version__,
        ref.pack.id,
        ref.pack.manifest.version,
        ref.key,
        ref.content_hash,
        repr(timeout),
        device or "",
        hashlib.sha256(code.encode("utf-8")).hexdigest(),
    ]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def verdict_from_json(data: dict) -> Verdict:
    return Verdict(
        status=data["status"],
        headline=data["headline"],
        checks=[CheckLine(**c) for c in data.get("checks") or []],
        mistakes=list(data.get("mistakes") or []),
        error=data.get("error"),
        output=data.get("output") or "",
        elapsed=float(data.get("elapsed") or 0.0),
    )


class VerdictCache:
    def __init__(self, path: Path | None = None):
        self.path = Path(path) if path else default_path()
        self._verdicts: dict[str, dict] = {}
        self._file: TextIO | None = None

    def load(self) -> VerdictCache:
        try:
            with open(self.path, encoding="utf-8") as f:
                for line in f:
                    try:
                        entry = json.loads(line)
                        self._verdicts[entry["key"]] = entry["verdict"]
                    except (ValueError, KeyError, TypeError):
                        continue  # a line cut short by an interrupted run
        except FileNotFoundError:
            pass
        except OSError:
            pass  # an unreadable cache is an empty one
        return self

    def get(self, key: str) -> Verdict | None:
        data = self._verdicts.get(key)
        if data is None:
            return None
        try:
            return verdict_from_json(data)
        except (KeyError, TypeError, ValueError):
            return None

    def put(self, key: str, verdict: Verdict) -> None:
        data = verdict.to_json()
        data.pop("passed", None)
        self._verdicts[key] = data
        try:
            if self._file is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (kept open across puts)
            self._file.write(json.dumps({"key": key, "verdict": data}) + "\n")
            self._file.flush()
        except OSError:
            pass  # no cache is slower, not wrong

    def close(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            except OSError:
                pass
            self._file = None

    def __len__(self) -> int:
        return len(self._verdicts)

    def __enter__(self) -> VerdictCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
