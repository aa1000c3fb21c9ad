"""Progress: the SQLite store (attempts, hints, drafts, reviews, position, settings) and
FSRS scheduling. Light on purpose: the standard library and ``fsrs`` only (pydantic only
when importing an export), never torch or textual.

    store = ProgressStore.open(args.data_dir)   # or ProgressStore(path)
    if store.notice: show(store.notice)         # e.g. a damaged file was moved aside
"""

from tutor.progress.database import FILENAME
from tutor.progress.records import Attempt, Draft, DueCards, ExerciseStats, Key, Position, Review
from tutor.progress.scheduling import LEECH_LAPSES, CardState
from tutor.progress.settings import Settings
from tutor.progress.store import ProgressStore

__all__ = [
    "FILENAME",
    "LEECH_LAPSES",
    "Attempt",
    "CardState",
    "Draft",
    "DueCards",
    "ExerciseStats",
    "Key",
    "Position",
    "ProgressStore",
    "Review",
    "Settings",
]
