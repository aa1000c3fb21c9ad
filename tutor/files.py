"""Reading files the tutor does not trust and writing files that must never be seen half-written.

``read_bounded`` reads at most a bound, only from a regular file (never a FIFO, a device or a
folder), and, when asked, without following a symbolic link at the last step: a file handed
in by a learner or found in a pack is data of unknown shape. ``write_atomic`` writes beside
the target and renames over it, so a reader sees the old file or the new one, and a full
disk or a file that cannot be replaced leaves the old one whole.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import tempfile
from pathlib import Path


class Unreadable(Exception):
    """A file that cannot be used; ``reason`` is a phrase to follow "cannot read NAME: "."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class TooLarge(Unreadable):
    def __init__(self, size: int, limit: int):
        super().__init__(f"it is {size:,} bytes, over the {limit:,}-byte limit")
        self.size = size
        self.limit = limit


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "it is a folder, not a file"
    if stat.S_ISFIFO(mode):
        return "it is a named pipe (FIFO), not a regular file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "it is a device, not a regular file"
    if stat.S_ISSOCK(mode):
        return "it is a socket, not a regular file"
    return "it is not a regular file"


def read_bounded(path: str | os.PathLike, limit: int, *, follow_links: bool = True) -> bytes:
    """The file's bytes, never more than ``limit`` read; ``Unreadable`` (or ``TooLarge``) otherwise."""
    # O_NONBLOCK: opening a FIFO must not wait for a writer; the fstat below refuses it.
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow_links:
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise Unreadable("no such file") from None
    except IsADirectoryError:
        raise Unreadable(_kind(stat.S_IFDIR)) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            reason = "it is a symbolic link, which is not followed" if not follow_links else "a loop of symbolic links"
            raise Unreadable(reason) from None
        raise Unreadable(describe(exc)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Unreadable(_kind(st.st_mode))
        chunks, got = [], 0
        while got <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
    except OSError as exc:
        raise Unreadable(describe(exc)) from None
    finally:
        os.close(fd)
    if got > limit:
        raise TooLarge(max(st.st_size, got), limit)
    return b"".join(chunks)


def write_atomic(path: str | os.PathLike, data: bytes | str) -> None:
    """Write ``data`` (str as UTF-8) to ``path`` whole or not at all; OSError when it cannot."""
    path = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def describe(exc: OSError) -> str:
    """An OSError as a phrase a person reads: "no space left on the disk", "permission denied"."""
    if exc.errno == errno.ENOSPC:
        return "no space left on the disk"
    if exc.errno == errno.EDQUOT:
        return "the disk quota is used up"
    if exc.errno in (errno.EPERM, errno.EACCES):
        return "permission denied (the file or its folder is read-only or immutable)"
    if exc.errno == errno.EROFS:
        return "the file system is read-only"
    return (exc.strerror or str(exc)).lower()


def parse_json(text: str | bytes, *, max_depth: int) -> object:
    """JSON from outside, nested no deeper than ``max_depth``; ValueError with one sentence
    otherwise (never a RecursionError)."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError("it is not UTF-8 text") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"it is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except RecursionError:  # nested too deep even for the JSON parser
        raise ValueError(too_deep(max_depth)) from None
    if _deeper_than(data, max_depth):
        raise ValueError(too_deep(max_depth))
    return data


def too_deep(limit: int) -> str:
    return f"it nests deeper than {limit} levels"


def _deeper_than(data: object, limit: int) -> bool:
    """Iterative, so depth itself cannot overflow the stack."""
    stack = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth >= limit:
                return True
            children = value.values() if isinstance(value, dict) else value
            stack.extend((child, depth + 1) for child in children)
    return False


def read_json_file(path: str | os.PathLike, *, max_bytes: int, max_depth: int, follow_links: bool = True) -> object:
    """A JSON file from outside: bounded in size and depth, from a regular file only;
    ``Unreadable`` with the reason otherwise."""
    raw = read_bounded(path, max_bytes, follow_links=follow_links)
    try:
        return parse_json(raw, max_depth=max_depth)
    except ValueError as exc:
        raise Unreadable(str(exc)) from None


def has_lone_surrogate(text: str) -> bool:
    """Text decoded from JSON escapes can hold halves of a character that no file can store."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
