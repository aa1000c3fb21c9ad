"""Whether learner code could change the tutor's own files: its installed code and its data
dir (the cache's key, the trust store, progress).

Learner code runs as the kernel's user. When that user can write the install, code could
patch the grader before it is imported; when it can write the data dir, it could read the
cache's key. ``doctor`` reports this, so an instructor knows whether grading rests on the
kernel's confinement alone.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import tutor


def install_dir() -> Path:
    return Path(tutor.__file__).resolve().parent


def _may_write(st: os.stat_result, uid: int, gids: set[int]) -> bool:
    if st.st_uid == uid:
        return bool(st.st_mode & stat.S_IWUSR)
    if st.st_gid in gids:
        return bool(st.st_mode & stat.S_IWGRP)
    return bool(st.st_mode & stat.S_IWOTH)


def writable_by(root: Path, uid: int, gids: set[int]) -> bool:
    """Whether ``uid`` (in groups ``gids``) may change anything in ``root``: the folder or
    file itself, any folder or file below it, or the folder holding it (by the permission
    bits; root may write anything)."""
    if uid == 0:
        return True
    try:
        parent = root.parent.stat()
        if _may_write(parent, uid, gids) and not parent.st_mode & stat.S_ISVTX:
            return True
    except OSError:
        pass
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in [".", *files]:
            try:
                if _may_write(os.stat(os.path.join(folder, name), follow_symlinks=False), uid, gids):
                    return True
            except OSError:
                continue
    return False


def exposure(data_dir: Path, uid: int | None = None, gids: set[int] | None = None) -> str:
    """One line for doctor: what learner code running as ``uid`` (the kernel's user; this
    process's by default) could write of the tutor's own."""
    uid = os.getuid() if uid is None else uid
    gids = set(os.getgroups()) | {os.getgid()} if gids is None else gids
    exposed = [
        what
        for what, path in (("its install", install_dir()), ("its data dir", data_dir))
        if writable_by(path, uid, gids)
    ]
    if not exposed:
        return f"kernels run as uid {uid}, which cannot write the tutor's install or data dir"
    return (
        f"kernels run as uid {uid}, which can write {' and '.join(exposed)}: grading rests on "
        "the kernel's confinement (run kernels as another user, or install read-only)"
    )
