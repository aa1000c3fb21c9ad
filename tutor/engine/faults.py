"""One sentence for the learner about each thing that can go wrong while code runs.

Every sentence says what happened and what it means for their work (are variables kept?),
because "kernel died" alone leaves a learner guessing.
"""

from __future__ import annotations

import re
import signal

KEPT = "the kernel is still running and your variables are kept"
GONE = "it was restarted, so earlier variables are gone"

_SIGNAL_WORDS = {
    "SIGSEGV": "segmentation fault",
    "SIGBUS": "bus error",
    "SIGFPE": "floating-point exception",
    "SIGILL": "illegal instruction",
    "SIGABRT": "abort",
}


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def death_cause(returncode: int | str | None) -> str:
    """Words for how the kernel process ended, from its exit status ("replaced": an attached
    kernel that its manager restarted; "gone" or None: unknown)."""
    if returncode == "replaced":
        return "it was restarted by whatever runs it"
    if not isinstance(returncode, int):
        return "it stopped responding"
    if returncode < 0:
        name = _signal_name(-returncode)
        if name == "SIGKILL":
            return "killed by SIGKILL, often because it ran out of memory"
        if name in _SIGNAL_WORDS:
            return _SIGNAL_WORDS[name]
        return f"killed by {name}"
    return f"it exited with status {returncode}"


_RESTARTED = (f"; {GONE}.", " and was started again; earlier variables are gone.")


def without_restart(sentence: str) -> str:
    """One of this module's crash sentences for a kernel that is thrown away, not started
    again (a verification's): what happened, without what a restart means for a live session."""
    for ending in _RESTARTED:
        if sentence.endswith(ending):
            return sentence[: -len(ending)] + "."
    return sentence


def crashed(returncode: int | str | None, *, wire: str | None = None, restarted: bool = True) -> str:
    """The kernel died while the learner's code ran (``wire``: the way to it failed instead,
    see KernelBackend.wire_fault). ``restarted`` False: the session does not bring a new
    kernel (a verification's is thrown away), so the sentence does not say it did."""
    if not restarted:
        return without_restart(crashed(returncode, wire=wire))
    if wire:
        return f"{wire} while your code ran; {GONE}."
    if returncode == "replaced":
        return "The Python kernel stopped while your code ran and was started again; earlier variables are gone."
    if not isinstance(returncode, int):
        return f"The Python kernel stopped responding while your code ran; {GONE}."
    if returncode >= 0:
        return f"Your code made the Python kernel exit with status {returncode} (as os._exit does); {GONE}."
    cause = death_cause(returncode)
    if cause.startswith("killed by SIGKILL"):
        return f"The Python kernel was {cause}; {GONE}."
    if cause.startswith("killed by"):
        return f"The Python kernel was {cause} while your code ran; {GONE}."
    return f"Your code crashed the Python kernel ({cause}); {GONE}."


def died_between_runs(returncode: int | str | None) -> str:
    return (
        f"The Python kernel had stopped since the last run ({death_cause(returncode)}), "
        "so a new one was started; earlier variables are gone."
    )


def died_while_idle(returncode: int | str | None) -> str:
    return (
        f"The Python kernel stopped while nothing was running ({death_cause(returncode)}); "
        "the next run starts a new one, and earlier variables are gone."
    )


def interrupted() -> str:
    return f"Your code was interrupted; {KEPT}."


def interrupt_escalated() -> str:
    return (
        "Your code did not stop when interrupted (it may catch KeyboardInterrupt), "
        "so the kernel was restarted; earlier variables are gone."
    )


def timed_out(limit: float) -> str:
    return f"Your code ran past the {limit:g} s time limit and was interrupted; {KEPT}."


def timed_out_restarted(limit: float) -> str:
    return (
        f"Your code ran past the {limit:g} s time limit and did not stop when interrupted, "
        "so the kernel was restarted; earlier variables are gone."
    )


def stopped_before_start() -> str:
    return "Your code was stopped before it started running; nothing changed in the kernel."


def restarted_during_run() -> str:
    return "The kernel was restarted while your code ran; earlier variables are gone."


def shut_down_during_run() -> str:
    return "The kernel was shut down while your code ran."


def exit_ignored() -> str:
    return f"exit() and quit() do nothing here; {KEPT}."


def input_unsupported() -> str:
    return "input() is not supported here; put the value directly in your code instead."


def output_refused(limit_bytes: int) -> str:
    return (
        f"Your code sent output in one piece larger than {limit_bytes >> 20} MB (one huge print or display), "
        "more than the tutor takes, so that output was dropped."
    )


def output_capped(total_lines: int, head: int, tail: int) -> str:
    return f"Your code printed {total_lines} lines; only the first {head} and the last {tail} are shown."


_ALLOC = re.compile(r"allocate (\d+) bytes")


def _size(nbytes: int) -> str:
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if nbytes >= scale:
            return f"{nbytes / scale:,.0f} {unit}"
    return f"{nbytes} bytes"


def for_error(ename: str, evalue: str) -> str | None:
    """A sentence for errors that are really faults (memory, recursion, exit); None for an
    ordinary exception, whose traceback says it all."""
    if ename == "SystemExit":
        return f"Your code called sys.exit(), which ends a script but not this session; {KEPT}."
    if ename == "StdinNotImplementedError":
        return input_unsupported()
    if ename == "RecursionError":
        return (
            "Your code recursed too deeply (a function that keeps calling itself without "
            f"reaching a base case); {KEPT}."
        )
    if ename == "MemoryError":
        return f"Your code ran out of memory (MemoryError); {KEPT}."
    if ename == "OutOfMemoryError" or (
        ename == "RuntimeError" and ("can't allocate memory" in evalue or "out of memory" in evalue)
    ):
        match = _ALLOC.search(evalue)
        asked = f" (it asked for {_size(int(match.group(1)))})" if match else ""
        return f"Your code tried to allocate more memory than is available{asked}; {KEPT}."
    return None
