"""Verdicts ``grade`` already reached, so a rerun only verifies what changed.

One JSON line per verdict, appended as each one arrives: an interrupted run keeps all it
finished; when the run ends (every learner's kernel gone) the file is rewritten whole with
the entries still valid. Each line carries an HMAC made with a key kept in the data dir
(``grade.key``, created on first use, readable only by its owner), so a line the tutor did
not write, or one changed since (learner code that reached the file), is ignored and its
file verified again. The key covers everything a verdict depends on: the code's hash, the exercise
(its pack, the pack's version and the exercise's own content), the time limit, the device
and the tutor's version. Lives in ``grade/verdicts.jsonl`` under the cache dir
($PTFUND_TUTOR_CACHE, or the platform's user cache dir); safe to delete.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path
from typing import BinaryIO

from tutor import __version__
from tutor.files import Unreadable, read_bounded, write_atomic
from tutor.grading.verdict import CheckLine, Verdict
from tutor.packs.catalog import ExerciseRef
from tutor.paths import cache_dir, data_dir

FILENAME = "verdicts.jsonl"
MAX_BYTES = 256 << 20  # far past any class; a larger file is not ours


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
    mistakes = list(data.get("mistakes") or [])
    mistake_ids = list(data.get("mistake_ids") or [])
    if len(mistake_ids) != len(mistakes):
        raise ValueError("a verdict cached before mistakes had ids: verify it again")
    return Verdict(
        status=data["status"],
        headline=data["headline"],
        checks=[CheckLine(**c) for c in data.get("checks") or []],
        mistakes=mistakes,
        error=data.get("error"),
        output=data.get("output") or "",
        elapsed=float(data.get("elapsed") or 0.0),
        mistake_ids=mistake_ids,
    )


KEY_FILENAME = "grade.key"


def default_key_path() -> Path:
    return data_dir() / KEY_FILENAME


def load_secret(path: Path) -> bytes | None:
    """The cache's HMAC key, created on first use; None when it can be neither read nor made
    (then nothing is cached)."""
    try:
        secret = read_bounded(path, 1024, follow_links=False)
        if len(secret) >= 32:
            return secret
    except Unreadable:
        pass
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as f:
            secret = secrets.token_bytes(32)
            f.write(secret)
        return secret
    except OSError:
        return None


def _mac(secret: bytes, key: str, verdict: dict) -> str:
    body = json.dumps([key, verdict], sort_keys=True, ensure_ascii=True)
    return hmac.new(secret, body.encode("ascii"), hashlib.sha256).hexdigest()


class VerdictCache:
    def __init__(self, path: Path | None = None, *, key_path: Path | None = None):
        self.path = Path(path) if path else default_path()
        self.key_path = Path(key_path) if key_path else default_key_path()
        self._secret: bytes | None = None
        self._verdicts: dict[str, dict] = {}
        self._file: BinaryIO | None = None
        self._changed = False

    def load(self) -> VerdictCache:
        self._secret = load_secret(self.key_path)
        if self._secret is None:
            return self
        try:
            data = read_bounded(self.path, MAX_BYTES, follow_links=False)
        except Unreadable:
            return self  # a missing, unreadable or oversized cache is an empty one
        for line in data.splitlines():
            try:
                entry = json.loads(line)
                key, verdict, mac = entry["key"], entry["verdict"], entry["mac"]
                if (
                    isinstance(key, str)
                    and isinstance(mac, str)
                    and hmac.compare_digest(mac, _mac(self._secret, key, verdict))
                ):
                    self._verdicts[key] = verdict
                else:
                    self._changed = True  # a line the tutor did not write: dropped at close
            except (ValueError, KeyError, TypeError, RecursionError):
                self._changed = True  # a line cut short by an interrupted run
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
        if self._secret is None:
            return
        data = verdict.to_json()
        data.pop("passed", None)
        self._verdicts[key] = data
        self._changed = True
        line = {"key": key, "verdict": data, "mac": _mac(self._secret, key, data)}
        try:
            if self._file is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._file = open(self.path, "ab")  # noqa: SIM115 (kept open across puts)
            self._file.write(json.dumps(line, ensure_ascii=True).encode("ascii") + b"\n")
            self._file.flush()
        except OSError:
            pass  # no cache is slower, not wrong

    def close(self) -> None:
        """Stop appending and write the file whole: the valid entries, each once."""
        if self._file is not None:
            try:
                self._file.close()
            except OSError:
                pass
            self._file = None
        if self._secret is None or not self._changed:
            return
        lines = [
            json.dumps({"key": k, "verdict": v, "mac": _mac(self._secret, k, v)}, ensure_ascii=True)
            for k, v in self._verdicts.items()
        ]
        try:
            write_atomic(self.path, "".join(line + "\n" for line in lines))
            self._changed = False
        except OSError:
            pass  # the appended lines still stand

    def __len__(self) -> int:
        return len(self._verdicts)

    def __enter__(self) -> VerdictCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
