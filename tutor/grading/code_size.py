"""The largest code the tutor takes as a learner's solution: one bound for the app's editor,
``check`` and ``grade``.

A learner's solution to an exercise is a few lines; far larger "code" is a wrong file or a
hostile one, and it makes the editor crawl and a verification run out of time for a reason
that has nothing to do with the code. At this bound the editor still answers each key in a
fraction of a second (benchmarks/editor_size.py).
"""

from __future__ import annotations

from pathlib import Path

from tutor.errors import TutorError
from tutor.files import TooLarge, Unreadable, read_bounded

MAX_CODE_BYTES = 64 * 1024


def code_size(code: str) -> int:
    return len(code.encode("utf-8", errors="surrogatepass"))


def too_large(size: int, what: str = "the code") -> str | None:
    """One sentence when ``size`` bytes is over the bound, else None."""
    if size <= MAX_CODE_BYTES:
        return None
    return f"{what} is {size:,} bytes, over the {MAX_CODE_BYTES:,}-byte limit for a solution"


def read_code_file(path: str | Path) -> str:
    """A solution file's text, read no further than the bound; TutorError in one sentence otherwise."""
    try:
        data = read_bounded(path, MAX_CODE_BYTES)
    except TooLarge as exc:
        raise TutorError(f"cannot check {path}: {too_large(exc.size, 'it')}") from None
    except Unreadable as exc:
        raise TutorError(f"cannot read {path}: {exc.reason}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise TutorError(f"cannot read {path}: not UTF-8 text") from None
