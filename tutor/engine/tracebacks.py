"""Tracebacks as the learner should see them: without the kernel's own machinery.

IPython shows every frame, so code that reaches into the kernel (``input()``,
``getpass``, a magic) shows frames of ipykernel and IPython that say nothing about the
learner's code. Those frames are dropped; the learner's frames, the libraries they called
(torch) and the exception line stay. An interruption (ctrl+c, a time limit) is no
library's fault, so its traceback drops the libraries' frames too: it shows where the
learner's code was when it stopped.
"""

from __future__ import annotations

import re

# Frame headers: IPython's "File /path/x.py:12, in f(...)" or "Cell In[3], line 2", and the
# standard library's '  File "/path/x.py", line 12, in f'.
_FRAME = re.compile(r'^(File (?P<ipy>\S.*?):\d+|Cell In\[|\s*File "(?P<std>[^"]+)", line \d+)')
_MACHINERY = re.compile(r"[/\\](ipykernel|IPython|jupyter_client|traitlets|tornado|zmq)[/\\]")
_LIBRARY = re.compile(r"[/\\](site|dist)-packages[/\\]")


def without_kernel_frames(lines: list[str], *, interrupted: bool = False) -> list[str]:
    """``lines`` less each frame (header and the source lines under it) of the kernel's
    machinery; with ``interrupted``, of every installed library as well."""
    dropped = _LIBRARY if interrupted else _MACHINERY
    out: list[str] = []
    skipping = False
    for line in lines:
        frame = _FRAME.match(line)
        if frame:
            path = frame.group("ipy") or frame.group("std") or ""
            skipping = bool(_MACHINERY.search(path) or dropped.search(path))
        elif skipping and line[:1] not in ("", " ", "-", "[") and not line[:1].isdigit():
            skipping = False  # the exception line, or "During handling of ...": the frame ended
        if not skipping:
            out.append(line)
    return out
