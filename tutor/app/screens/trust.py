"""Asks the learner whether to run an instructor pack's code (docs/trust.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tutor.app.screens.confirm import ConfirmScreen

if TYPE_CHECKING:
    from tutor.packs.loader import Pack


class TrustScreen(ConfirmScreen):
    def __init__(self, pack: Pack) -> None:
        authors = ", ".join(pack.manifest.authors) or "unknown authors"
        where = "from" if pack.distribution else "folder"
        until = "another version is installed" if pack.distribution else "the pack's files change"
        super().__init__(
            f"Run code from the pack '{pack.title}'?",
            f"This pack is not built in. Its exercises run Python (setup, checks, solutions) "
            f"on this machine with your permissions.\n\n"
            f"  pack:    {pack.id} {pack.manifest.version} by {authors}\n"
            f"  {where}:  {pack.source}\n\n"
            f"Trust it only if you trust where it came from. The answer is remembered until "
            f"{until}.",
            yes="Trust and run",
            no="Don't run",
        )
