"""A problem found in a pack, reported as ``FILE:LINE:COL: field: message``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tutor.errors import TutorError
from tutor.escape import name_for_terminal

# Stands in for Markdown that could not be read, so one bad file is one problem, not several.
UNREADABLE = "(unreadable file)"


@dataclass(frozen=True, order=True)
class Problem:
    file: str
    line: int
    col: int
    field: str
    message: str

    def __str__(self) -> str:
        # Pack text (field names, titles, file names) can hold terminal escapes: shown inert.
        where = f"{name_for_terminal(str(self.file))}:{self.line}:{self.col}"
        message = name_for_terminal(self.message)
        return f"{where}: {name_for_terminal(self.field)}: {message}" if self.field else f"{where}: {message}"

    def to_json(self) -> dict:
        return {"file": self.file, "line": self.line, "col": self.col, "field": self.field, "message": self.message}


@dataclass(frozen=True)
class Pos:
    """Where a value stands: file, 1-based line and column."""

    file: Path
    line: int
    col: int = 1


class PackError(TutorError):
    """A pack that cannot be used; ``problems`` lists every problem found."""

    exit_code = 1

    def __init__(self, root: Path, problems: list[Problem]):
        self.root = root
        self.problems = problems
        first = str(problems[0]) if problems else "unknown problem"
        more = f" (and {len(problems) - 1} more: run `ptfund-tutor pack validate {root}`)" if len(problems) > 1 else ""
        super().__init__(f"pack {root} has problems: {first}{more}")


def field_path(path: tuple) -> str:
    """('exercises', 0, 'checks', 1, 'expr') -> 'exercises[0].checks[1].expr'."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out
