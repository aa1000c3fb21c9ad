"""Recording an attempt from outside the app (``check``, ``watch``, the warm server): the
same progress store, and a store problem never hides the verdict."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tutor.grading.verdict import Verdict
    from tutor.packs.catalog import ExerciseRef


def record_attempt(data: Path, ref: ExerciseRef, code: str, verdict: Verdict) -> str | None:
    """Store the attempt; None, or the warning line to show when it could not be saved."""
    try:
        from tutor.progress.store import ProgressStore

        store = ProgressStore.open(data)
        try:
            store.record_attempt(ref.pack.id, ref.key, passed=verdict.passed, code=code, content_hash=ref.content_hash)
        finally:
            store.close()
    except Exception as exc:  # a full disk, a read-only or odd data dir, a newer database: all the same to the learner
        reason = (exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)) or type(exc).__name__
        reason = " ".join(reason.split())
        return f"ptfund-tutor: warning: this attempt was not saved ({reason}); the verdict stands"
    return None
