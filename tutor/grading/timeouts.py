"""What to tell a learner whose check ran out of time, from where the interrupt found it.

A time limit reached is not always "a loop that never ends": the code may be waiting
(``time.sleep``), the exercise's setup or its checks may be what was still running, or the
code may be too large to get through. The traceback of the interrupt says which.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tutor.engine.events import WAITING_SHARE

if TYPE_CHECKING:
    from tutor.engine.events import RunResult

# The names the check library compiles code under (tutor/checks/namespaces.py; the UI
# process cannot import it, it imports torch). tests/test_verdict.py keeps them equal.
YOUR_CODE = "<your code>"
SETUP = "<setup>"

_FRAME = re.compile(r"^File (?P<file>\S.*?):(?P<line>\d+)")
_SOURCE = re.compile(r"^-+> ?(\d+)\s?(?P<src>.*)$")  # IPython marks the running line "----> 2 ..."
_WAITS = re.compile(r"\b(sleep|input|wait|join|acquire|recv|accept|select)\(")

# A time limit counts the kernel's CPU time (a busy machine's other processes do not use up
# the learner's limit), under a wall-clock ceiling this many times larger (a wait uses no CPU).
CEILING_FACTOR = 3.0
CEILING_MIN_EXTRA = 60.0
PROGRESS_WINDOW = 5.0  # output this recent at the end means the code was making progress


def cpu_limits(budget: float, threads: int) -> tuple[float, float]:
    """(CPU seconds, wall-clock ceiling) for a run of ``budget`` seconds on ``threads`` torch
    threads: each thread may use the budget, the clock allows far more."""
    return budget * max(1, threads), max(budget * CEILING_FACTOR, budget + CEILING_MIN_EXTRA)


def threads_cell(threads: int) -> str:
    """The line that gives a verification kernel its torch threads (kernels side by side
    on a busy machine each spinning on every core slow each other down)."""
    return f"import torch as _ptfund_torch\n_ptfund_torch.set_num_threads({int(threads)})\ndel _ptfund_torch\n"


def _progressing(run: RunResult | None) -> bool:
    return run is not None and run.quiet_for is not None and run.quiet_for <= PROGRESS_WINDOW


def how_long(run: RunResult | None) -> str:
    """How long the code ran and what it was doing at the end, as a sentence ("" if unknown)."""
    if run is None or not run.elapsed:
        return ""
    if run.cpu_time is not None:
        ran = f"It ran for {run.cpu_time:.0f} s of CPU time ({run.elapsed:.0f} s on the clock)"
    else:
        ran = f"It ran for {run.elapsed:.0f} s"
    if _progressing(run):
        return f"{ran} and was still printing output at the end: it was making progress, too slowly for the limit."
    if run.cpu_share is not None and run.cpu_share < WAITING_SHARE:
        return f"{ran} and was waiting at the end, using no CPU."
    if run.quiet_for is not None:
        return f"{ran} and was computing, but had printed nothing for its last {run.quiet_for:.0f} s."
    if run.cpu_share is not None:
        return f"{ran} and was computing at the end, printing nothing."
    return f"{ran}."


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


def timeout_sentence(traceback: tuple[str, ...] | list[str] | None, limit: float, run: RunResult | None = None) -> str:
    where = _where(traceback, limit, _progressing(run))
    after = how_long(run)
    return f"{where} {after}" if after else where


def _where(traceback: tuple[str, ...] | list[str] | None, limit: float, progressing: bool) -> str:
    within = f"the {limit:g} s time limit"
    slower = "make it do less work (fewer steps, smaller tensors)"
    frames = _frames(traceback or ())
    own = [f for f in frames if f[0] == YOUR_CODE]
    if own:
        _, line, src = own[-1]
        quoted = f" (`{src}`)" if src else ""
        if src and _WAITS.search(src):
            return f"Your code was still waiting at line {line}{quoted} when {within} came: remove the wait."
        if progressing:
            return f"Your code was still running line {line}{quoted} when {within} came: {slower}."
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
    if progressing:
        return f"Your code did not finish within {within} and did not stop when interrupted: {slower}."
    return (
        f"Your code did not finish within {within} and did not stop when interrupted "
        "(one long operation, such as a huge tensor, or a loop that never ends)."
    )
