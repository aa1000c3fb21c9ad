"""The check library compiled once per version, not once per fork server.

Kernels get the check library as source (inject.py) and compile it: about 0.2 s of a fork
server's warm-up, on the way to a cold ``check``'s first kernel. The fork server keeps what
it compiled in the cache dir, keyed by the library's digest (its exact sources) and the
interpreter's bytecode tag, and the next fork server starts from it: what Python's
``__pycache__`` does for files, for a library that has no files in a kernel.

Only the fork server reads or writes this (it runs no learner code, and a confined kernel
cannot write outside its scratch directory). What is read is checked before use: a dict of
code objects, each for a module of these sources under the file name the finder gives it;
anything else is ignored and compiled anew. Standard library only, plus tutor.paths.
"""

from __future__ import annotations

import contextlib
import importlib.util
import marshal
import os
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

from tutor.paths import cache_dir

MAX_BYTES = 32 << 20  # far above the library's few MB: a bound on what is read
KEEP = 3  # caches of other versions kept (another install may still use one)


def _folder() -> Path:
    return cache_dir() / "checks-code"


def _path(digest: str) -> Path:
    tag = f"{sys.implementation.cache_tag}-{importlib.util.MAGIC_NUMBER.hex()}-opt{sys.flags.optimize}"
    return _folder() / f"{digest[:32]}-{tag}.marshal"


def load_into(finder: Any) -> int:
    """Give ``finder`` (inject.py's SourceFinder) the code objects cached for its sources;
    how many it got (0 when there is no usable cache, or no finder)."""
    if finder is None:
        return 0
    path = _path(str(finder.ptfund_digest))
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
        if len(data) > MAX_BYTES:
            return 0
        cached = marshal.loads(data)
    except (OSError, EOFError, ValueError, TypeError):
        return 0
    if not isinstance(cached, dict):
        return 0
    usable = {
        name: code
        for name, code in cached.items()
        if isinstance(name, str)
        and name in finder.sources
        and isinstance(code, types.CodeType)
        and code.co_filename == finder._filename(name)
    }
    finder.compiled.update(usable)
    return len(usable)


def save_from(finder: Any) -> None:
    """Keep what ``finder`` compiled, when it compiled every module of its sources and the
    cache does not hold them already; a failure to write is no error (the next fork server
    compiles again)."""
    if finder is None:
        return
    compiled = {name: code for name, code in finder.compiled.items() if name in finder.sources}
    if set(compiled) != set(finder.sources):
        return
    path = _path(str(finder.ptfund_digest))
    if path.exists():
        return
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".checks-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(marshal.dumps(compiled))
            os.replace(tmp, path)  # whole or not at all: another fork server may read it now
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            return
        _prune(path)


def _prune(current: Path) -> None:
    """Remove all but the newest few caches (each version of the library leaves one)."""
    with contextlib.suppress(OSError):
        others = sorted(
            (p for p in current.parent.glob("*.marshal") if p != current),
            key=lambda p: p.stat().st_mtime,
            reverse=True,
        )
        for old in others[KEEP:]:
            old.unlink()
