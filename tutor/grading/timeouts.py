"""What to tell a learner whose check ran out of time, from where the interrupt found it.

A time limit reached is not always "a loop that never ends": the code may be waiting
(``time.sleep``), the exercise's setup or its checks may be what was still running, or the
code may be too large to get through. The traceback of the interrupt says which.
"""

from __future__ import annotations

import re

# The names the check library compiles code under (tutor/checks/namespaces.py; the UI
# process cannot import it, it imports torch). tests/test_verdict.py keeps them equal.
YOUR_CODE = "<your code>"
SETUP = "<setup>"

_FRAME = re.compile(r"^File (?P<file>\S.*?):(?P<line>\d+)")
_SOURCE = re.compile(r"^-+> ?(\d+)\s?(?P<src>.*)$")  # IPython marks the running line "----> 2 ..."
_WAITS = re.compile(r"\b(sleep|input|wait|join|acquire|recv|accept|select)\(")


def _frames(traceback: tuple[str, ...] | list[str]) -> list[tuple[str, int, str]]:
    """(file, line, source of the running line) for each frame, outermost first."""
    frames: list[tuple[str, int, str]] = []
    for text in traceback:
        frame = _FRAME.match(text)
        if frame:
            frames.append((frame.group("file"), int(frame.group("line")), ""))
            continue
        source = _SOURCE.match(text)
        if source and frames and not frames[-1][2]:
            file, line, _ = frames[-1]
            frames[-1] = (file, line, source.group("src").strip())
    return frames


def timeout_sentence(traceback: tuple[str, ...] | list[str] | None, limit: float) -> str:
    within = f"the {limit:g} s time limit"
    frames = _frames(traceback or ())
    own = [f for f in frames if f[0] == YOUR_CODE]
    if own:
        _, line, src = own[-1]
        quoted = f" (`{src}`)" if src else ""
        if src and _WAITS.search(src):
            return f"Your code was still waiting at line {line}{quoted} when {within} came: remove the wait."
        if src.startswith(("while ", "for ")):
            return f"Your code was still looping at line {line}{quoted} when {within} came: look for a loop that never ends."
        return (
            f"Your code was still running line {line}{quoted} when {within} came: look for work far larger "
            "than the exercise needs, or a loop that never ends."
        )
    if any(f[0] == SETUP for f in frames):
        return (
            f"The exercise's setup code did not finish within {within}, before your code ran: "
            "the problem is in the exercise, not in your code (tell the pack's author)."
        )
    if frames:
        return (
            f"Your code finished, but checking its results did not finish within {within}: "
            "its values may be far larger than the exercise expects."
        )
    return (
        f"Your code did not finish within {within} and did not stop when interrupted "
        "(one long operation, such as a huge tensor, or a loop that never ends)."
    )
