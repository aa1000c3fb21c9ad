"""The CPU time a local kernel process has used, so a time limit can count the code's own
work: on a busy machine the wall clock also counts the time other processes held the cores.

Linux only (/proc); elsewhere ``process_cpu_seconds`` is None and limits fall back to the
wall clock.
"""

from __future__ import annotations

import os

try:
    _TICKS = os.sysconf("SC_CLK_TCK")
except (AttributeError, ValueError, OSError):  # not a POSIX system
    _TICKS = 0


def process_cpu_seconds(pid: int) -> float | None:
    """User plus system CPU seconds of every thread of ``pid``; None if it cannot be read."""
    if not _TICKS:
        return None
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ")".
    fields = stat[stat.rfind(b")") + 2 :].split()
    try:
        return (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime (fields 14 and 15)
    except (IndexError, ValueError):
        return None
