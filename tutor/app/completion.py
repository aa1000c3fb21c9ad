"""Kernel completions applied to a line or an editor: the same rule for both."""

from __future__ import annotations

import os

SHOWN = 12


def insertion(matches: list[str], replaced_len: int) -> str | None:
    """The only match, or the matches' common prefix when it adds something; else None."""
    if not matches:
        return None
    text = matches[0] if len(matches) == 1 else os.path.commonprefix(matches)  # noqa: RUF071 - completions, not paths
    return text if text and len(text) >= replaced_len else None


def summary(matches: list[str]) -> str | None:
    """The choices to show when there are several."""
    if len(matches) < 2:
        return None
    return "  ".join(matches[:SHOWN]) + ("  …" if len(matches) > SHOWN else "")
