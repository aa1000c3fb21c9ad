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


def scheduler(
    desired_retention: float = DEFAULT_RETENTION, *, fuzz: bool = True, parameters: tuple[float, ...] | None = None
) -> Scheduler:
    """``parameters``: the learner's fitted FSRS parameters (``progress optimize``), else fsrs's defaults."""
    if parameters is None:
        return Scheduler(desired_retention=desired_retention, enable_fuzzing=fuzz)
    return Scheduler(parameters=parameters, desired_retention=desired_retention, enable_fuzzing=fuzz)


# ---------------------------------------------------------------- fitting the parameters

# The cell `progress optimize` runs in a kernel: fsrs's optimizer needs torch, which only
# kernels import. It reads the review log (JSON), fits, and prints one line of JSON after
# OPTIMIZER_MARK: the parameters, and the log loss of the old and the new ones on this log.
OPTIMIZER_MARK = "ptfund-optimizer-result:"
_OPTIMIZER_CELL = """\
import json as _json
from datetime import datetime as _dt
from fsrs import Optimizer as _Optimizer, Rating as _Rating, ReviewLog as _ReviewLog

def _ptfund_optimize(request):
    logs = [
        _ReviewLog(card_id=card, rating=_Rating(rating), review_datetime=_dt.fromisoformat(at), review_duration=None)
        for card, rating, at in request["reviews"]
    ]
    optimizer = _Optimizer(logs)
    new = [float(x) for x in optimizer.compute_optimal_parameters()]

    def loss(parameters):
        try:  # fsrs's own measure of fit (private: no review on a later day leaves it undefined)
            return float(optimizer._compute_batch_loss(parameters=parameters))
        except Exception:
            return None

    return {"parameters": new, "loss_before": loss(request["current"]), "loss_after": loss(new)}

print(MARK + _json.dumps(_ptfund_optimize(_json.loads(REQUEST))))
"""


def optimizer_cell(reviews: list[tuple[str, str, int, datetime]], current: tuple[float, ...]) -> str:
    """The kernel cell that fits parameters to ``reviews`` ((pack, item, rating, at), oldest first)."""
    import json

    ids: dict[tuple[str, str], int] = {}
    rows = [
        (ids.setdefault((pack, item), len(ids) + 1), rating, utc(at).isoformat()) for pack, item, rating, at in reviews
    ]
    request = json.dumps({"reviews": rows, "current": list(current)})
    return f"MARK = {OPTIMIZER_MARK!r}\nREQUEST = {request!r}\n" + _OPTIMIZER_CELL


def optimizer_result(output: str) -> dict | None:
    """The optimizer cell's result from its printed output, or None if it printed none."""
    import json

    for line in reversed(output.splitlines()):
        if line.startswith(OPTIMIZER_MARK):
            try:
                data = json.loads(line[len(OPTIMIZER_MARK) :])
            except ValueError:
                return None
            return data if isinstance(data, dict) else None
    return None


def next_interval_days(parameters: tuple[float, ...] | None, retention: float, answers: int = 3) -> float:
    """Days until a new card answered right ``answers`` times, a day apart after the first, is due again."""
    from datetime import timedelta

    sched = scheduler(retention, fuzz=False, parameters=parameters)
    now = datetime(2000, 1, 1, tzinfo=timezone.utc)
    card = Card(card_id=0, due=now)
    for _ in range(answers):
        card, _ = sched.review_card(card, Rating.Good, review_datetime=now)
        now = max(now + timedelta(days=1), card.due)
    return (card.due - (card.last_review or now)).total_seconds() / 86400


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
