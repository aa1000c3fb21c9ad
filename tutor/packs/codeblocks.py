"""The fenced Python blocks of a lesson's intuition: ``pack test`` runs them
(tutor/grading/intuition.py), and a pack with runnable ones carries Python (trust.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass

NO_RUN = "no-run"


@dataclass(frozen=True)
class Block:
    """One fenced Python block of an intuition."""

    number: int  # 1-based among the intuition's Python blocks
    line: int  # the line of the intuition text its code starts on (1-based)
    code: str
    runs: bool  # False: marked no-run by its author

    @property
    def id(self) -> str:
        return "intuition"


def blocks(markdown: str) -> list[Block]:
    """The intuition's ```python blocks, in order (```python no-run, or a first line
    ``# no-run``, marks one the text shows but pack test must not run)."""
    from markdown_it import MarkdownIt

    found: list[Block] = []
    for token in MarkdownIt("commonmark").parse(markdown):
        words = token.info.split()
        if token.type != "fence" or words[:1] != ["python"] or token.map is None:
            continue
        first = next((s.strip() for s in token.content.splitlines() if s.strip()), "")
        runs = NO_RUN not in words[1:] and not re.match(r"^#\s*no-run\b", first)
        # map[0] is the fence's 0-based line: the code starts two lines on, 1-based
        found.append(Block(len(found) + 1, token.map[0] + 2, token.content, runs))
    return found
