"""The progress database file: opening (creating, upgrading, moving a damaged file
aside), transactions, and the errors a learner can be told about in one sentence.

Durability (docs/architecture.md, "Reliability"): WAL journal, ``synchronous=FULL``, every
write a single ``BEGIN IMMEDIATE`` transaction, and a busy timeout so two processes writing
at once wait for each other instead of failing. A kill -9 at any moment loses nothing
committed: SQLite rolls an interrupted transaction back on the next open.

One connection is shared by all threads, serialised by a lock.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TypeVar

from tutor.errors import TutorError
from tutor.progress import schema

FILENAME = "progress.sqlite3"

# SQLite result codes that mean the file itself is damaged (not merely busy or locked).
_SQLITE_CORRUPT = 11
_SQLITE_NOTADB = 26

_D = TypeVar("_D", bound="Database")


class CorruptDatabase(Exception):
    """Internal: the file is not a usable database."""


class _Busy(Exception):
    """Internal: another connection held a lock the busy handler does not wait for."""


def _is_busy(exc: sqlite3.DatabaseError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED (and their extended codes)
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _is_damage(exc: sqlite3.DatabaseError) -> bool:
    """The file itself is broken (primary code CORRUPT or NOTADB), not merely busy."""
    return ((getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF) in (_SQLITE_CORRUPT, _SQLITE_NOTADB)


def _reason(exc: sqlite3.Error, path: Path) -> str:
    """SQLite's words, and what they mean on a full disk (where it may say "disk I/O error")."""
    text = str(exc)
    if "full" in text:
        return text
    try:
        full = shutil.disk_usage(path.parent).free == 0
    except OSError:
        full = False
    return f"{text} (the disk is full)" if full else text


def connect_readonly(path: Path, timeout: float = 5.0) -> sqlite3.Connection:
    """A connection that never writes, also on a full disk.

    A WAL database read with ``mode=ro`` still needs its shared-memory file (``-shm``) sized
    on disk, which a full disk refuses ("disk I/O error"). Then, if no write-ahead log holds
    commits the main file lacks (no ``-wal``, or an empty one), the file is read as
    ``immutable``: without locks or shared memory, as it is on disk. Raises sqlite3.Error.
    """
    uri = path.resolve().as_uri()
    conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=timeout, isolation_level=None, check_same_thread=False)
    try:
        conn.execute("PRAGMA user_version").fetchone()  # the first read opens the WAL
        return conn
    except sqlite3.OperationalError:
        conn.close()
        wal = Path(f"{path}-wal")
        if wal.exists() and wal.stat().st_size > 0:
            raise
    except BaseException:
        conn.close()
        raise
    return sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None, check_same_thread=False)


def _file_identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


class Database:
    """The open database at ``path`` (created or upgraded to the current schema).

    If the file is damaged it is moved aside and a fresh one started; ``notice`` then holds
    one sentence to show the learner (None otherwise).

    ``readonly``: for commands that only look (``progress``, ``progress export``), so they
    work on a full disk. An existing, sound file at the current schema is opened without
    writing; anything else (no file yet, an upgrade, damage) is opened as usual.
    """

    def __init__(self, path: str | os.PathLike, *, busy_timeout: float = 30.0, readonly: bool = False):
        self.path = Path(path)
        self.notice: str | None = None
        self._busy_timeout = busy_timeout
        self._lock = threading.RLock()
        self._conn = (readonly and self._open_readonly()) or self._open()

    # ------------------------------------------------------------ opening

    def _open_readonly(self) -> sqlite3.Connection | None:
        if not self.path.is_file():
            return None
        try:
            conn = connect_readonly(self.path, self._busy_timeout)
        except sqlite3.Error as exc:
            if isinstance(exc, sqlite3.DatabaseError) and _is_damage(exc):
                return None
            raise TutorError(f"cannot read the progress database {self.path}: {_reason(exc, self.path)}") from None
        try:
            sound = schema.user_version(conn) == schema.SCHEMA_VERSION and conn.execute(
                "PRAGMA integrity_check"
            ).fetchall() == [("ok",)]
        except sqlite3.DatabaseError:
            sound = False
        if not sound:
            conn.close()
            return None
        return conn

    def _open(self) -> sqlite3.Connection:
        # A few tries: another process may be moving the same damaged file aside.
        for _ in range(3):
            identity = _file_identity(self.path)
            try:
                return self._connect_patiently()
            except CorruptDatabase as exc:
                self._move_aside(identity, str(exc))
        return self._connect_patiently()

    def _connect_patiently(self) -> sqlite3.Connection:
        """Connect, waiting out another process that is creating or upgrading the file.

        SQLite's busy handler does not cover every lock on the way in: switching a new
        file to WAL while a second process does the same can fail at once with "database
        is locked". Such a failure is retried until the busy timeout, like any other wait.
        """
        deadline = time.monotonic() + self._busy_timeout
        delay = 0.005
        while True:
            try:
                return self._connect()
            except _Busy:
                if time.monotonic() >= deadline:
                    raise TutorError(
                        f"cannot open the progress database {self.path}: another process keeps it locked"
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.2)

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self.path, timeout=self._busy_timeout, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise TutorError(f"cannot open the progress database {self.path}: {_reason(exc, self.path)}") from None
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000):d}")
            conn.execute("PRAGMA journal_mode = WAL")
            # FULL: a commit is on disk before it returns (NORMAL could lose the last
            # commits on power loss; a kill -9 alone is safe either way).
            conn.execute("PRAGMA synchronous = FULL")
            rows = conn.execute("PRAGMA integrity_check").fetchall()
            if rows != [("ok",)]:
                raise CorruptDatabase("integrity check failed: " + "; ".join(str(r[0]) for r in rows[:3]))
            self._migrate(conn)
            return conn
        except sqlite3.DatabaseError as exc:
            conn.close()
            # Only damage moves the file aside; busy, locked, I/O errors never do.
            if _is_damage(exc):
                raise CorruptDatabase(str(exc)) from None
            if _is_busy(exc):
                raise _Busy() from None
            raise TutorError(f"cannot open the progress database {self.path}: {_reason(exc, self.path)}") from None
        except BaseException:
            conn.close()
            raise

    def _migrate(self, conn: sqlite3.Connection) -> None:
        if schema.user_version(conn) == schema.SCHEMA_VERSION:
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = schema.user_version(conn)  # again, under the write lock
            if version > schema.SCHEMA_VERSION:
                raise TutorError(
                    f"the progress database {self.path} was written by a newer ptfund-tutor "
                    f"(schema {version}, this one knows {schema.SCHEMA_VERSION}); upgrade ptfund-tutor to use it"
                )
            schema.apply(conn)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _move_aside(self, identity: tuple[int, int] | None, reason: str) -> None:
        # Only move the file we found damaged: if another process already replaced it with a
        # fresh database, leave that one alone.
        if identity is None or _file_identity(self.path) != identity:
            return
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        n = 1
        while target.exists():
            target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}-{n}")
            n += 1
        try:
            os.rename(self.path, target)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise TutorError(
                f"the progress database {self.path} is damaged and could not be moved aside: {exc}"
            ) from None
        # The WAL belongs to the damaged file: a fresh database must never replay it.
        wal = Path(f"{self.path}-wal")
        if wal.exists():
            try:
                os.rename(wal, f"{target}-wal")
            except OSError:
                wal.unlink(missing_ok=True)
        Path(f"{self.path}-shm").unlink(missing_ok=True)
        self.notice = (
            f"Your progress database was damaged ({reason}), so it was moved to {target} and a fresh one was started."
        )

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self: _D) -> _D:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ transactions

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction. IMMEDIATE takes the write lock up front: a deferred
        transaction that later needs it can fail with SQLITE_BUSY without waiting."""
        with self._lock:
            conn = self._conn
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
            except sqlite3.OperationalError as exc:
                # Disk full, read-only file, another process holding the lock past the
                # busy timeout: the learner's problem to fix, so one sentence, no traceback.
                raise TutorError(f"could not save progress to {self.path}: {_reason(exc, self.path)}") from None
            except sqlite3.DatabaseError as exc:
                if _is_damage(exc):
                    raise TutorError(
                        f"the progress database {self.path} is damaged ({exc}); the next start moves it aside "
                        "and starts a fresh one"
                    ) from None
                raise

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """A consistent snapshot for reads of several statements."""
        with self._lock:
            conn = self._conn
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")
