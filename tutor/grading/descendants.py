"""Every process a run of ``grade`` started is ended before its results are written.

A learner's code can start a daemon (fork, ``setsid``, fork again) that leaves its kernel's
process group and outlives it, to rewrite the gradebook, results.json or the cache after
the tutor wrote them. On Linux the grading process makes itself a *child subreaper*
(prctl PR_SET_CHILD_SUBREAPER): an orphan anywhere below it is re-parented to it rather
than to init, so once the kernels are gone every process still below it is a leftover of
learner code, and is killed before anything is written. Elsewhere this is a no-op (the
kernel's own confinement is then all there is; ``doctor`` says which applies).
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import sys
from pathlib import Path

log = logging.getLogger("tutor.grading")

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Adopt orphans of this process's descendants; False where the platform cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def descendants(pid: int | None = None) -> list[int]:
    """The processes below ``pid`` (this process by default), read from /proc."""
    pid = os.getpid() if pid is None else pid
    children: dict[int, list[int]] = {}
    try:
        entries = list(Path("/proc").iterdir())
    except OSError:
        return []
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            # The command name, in parentheses, may hold spaces and ")": split after the last.
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(entry.name))
        except (OSError, IndexError, ValueError):
            continue  # it ended while being read
    found, stack = [], list(children.get(pid, []))
    while stack:
        child = stack.pop()
        found.append(child)
        stack.extend(children.get(child, []))
    return found


def end_descendants() -> int:
    """Kill every process left below this one and reap those that are its children;
    returns how many were killed. Call only when the kernels are no longer needed."""
    killed = 0
    for _ in range(3):  # a process forking while it is killed: look again
        left = descendants()
        if not left:
            break
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except (ProcessLookupError, PermissionError):
                pass
        for pid in left:
            try:
                os.waitpid(pid, 0)  # only this process's children (adopted orphans) can be reaped
            except ChildProcessError:
                pass
            except OSError:
                pass
    if killed:
        log.warning("ended %d process(es) left running by learner code", killed)
    return killed
