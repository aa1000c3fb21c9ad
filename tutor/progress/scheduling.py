"""FSRS scheduling (the ``fsrs`` package): wrong -> Again, right -> Good.

Cards are scheduled per (pack, item); fsrs's own ``card_id`` is irrelevant to us, so every
fsrs.Card gets id 0 (a missing id makes fsrs sleep 1 ms to invent one).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from fsrs import Card, Rating, Scheduler, State

DEFAULT_RETENTION = 0.9
DEFAULT_NEW_PER_DAY = 20
# Wrong answers after which a card is a leech: the idea did not stick, so the quiz points
# the learner back to the lesson section that teaches it (Anki's default threshold).
LEECH_LAPSES = 8


def rating_for(correct: bool) -> Rating:
    return Rating.Good if correct else Rating.Again


def scheduler(desired_retention: float = DEFAULT_RETENTION, *, fuzz: bool = True) -> Scheduler:
    return Scheduler(desired_retention=desired_retention, enable_fuzzing=fuzz)


def utc(dt: datetime | None = None) -> datetime:
    """``dt`` as an aware UTC datetime (naive means UTC); now when None.

    fsrs insists on ``tzinfo is timezone.utc`` exactly, not merely a zero offset.
    """
    if dt is None:
        return datetime.now(timezone.utc)
    if dt.tzinfo is None:
        return dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc)


@dataclass(frozen=True)
class CardState:
    """A card's schedule as stored, plus what the UI says about it."""

    pack: str
    item: str
    state: State
    step: int | None
    stability: float | None
    difficulty: float | None
    due: datetime
    last_review: datetime | None
    first_review: datetime
    reps: int
    lapses: int
    content_hash: str | None  # the content when last reviewed

    @property
    def leech(self) -> bool:
        return self.lapses >= LEECH_LAPSES

    def changed(self, current_hash: str | None) -> bool:
        """True when the card's content differs from what the learner last reviewed."""
        return current_hash is not None and self.content_hash is not None and current_hash != self.content_hash

    def fsrs_card(self) -> Card:
        return Card(
            card_id=0,
            state=self.state,
            step=self.step,
            stability=self.stability,
            difficulty=self.difficulty,
            due=utc(self.due),
            last_review=self.last_review and utc(self.last_review),
        )


def when(due: datetime, now: datetime) -> str:
    """'in 10 minutes (14:05)', 'in 3 days (Mon 12 May)': relative, then local clock time."""
    seconds = (due - now).total_seconds()
    local = due.astimezone()
    if seconds < 30:
        return "now"
    minutes = max(1, round(seconds / 60))
    if minutes < 60:
        rel = f"in {minutes} minute{'s' * (minutes != 1)}"
    elif minutes < 48 * 60:
        hours = round(minutes / 60)
        rel = f"in {hours} hour{'s' * (hours != 1)}"
    else:
        days = round(minutes / 1440)
        rel = f"in {days} days"
    stamp = local.strftime("%H:%M") if seconds < 20 * 3600 else local.strftime("%a %d %b %H:%M")
    return f"{rel} ({stamp})"


def short_list(names: list[str], shown: int = 3) -> str:
    """'A', 'A and B', 'A, B and C', 'A, B, C and 2 more' (lesson titles in one line)."""
    if len(names) > shown:
        names = [*names[:shown], f"{len(names) - shown} more"]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
