"""Validation of ``progress export`` documents before ``progress import`` writes anything.

Imported lazily by the store (pydantic is not needed to record progress, and writers
should start fast).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Literal

from fsrs import State
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator

from tutor.progress.scheduling import CardState, utc
from tutor.progress.settings import validate_setting

# The export document's name and version: its one home (the store writes them on export).
FORMAT = "ptfund-tutor-progress"
VERSION = 1


def _aware(v: datetime) -> datetime:
    if v.tzinfo is None:
        raise ValueError("needs a time zone, e.g. +00:00")
    return utc(v)


Time = Annotated[datetime, AfterValidator(_aware)]
# Counts and durations fit SQLite's 64-bit INTEGER with room to spare (a larger number is
# a damaged file, not a learner's history).
MAX_COUNT = 2**53
Text = Annotated[str, Field(min_length=1, max_length=500)]
Uid = Annotated[str, Field(min_length=1, max_length=100)]
Hash = Annotated[str, Field(max_length=200)]


class _M(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)  # strict: "yes" is not a bool


class AttemptIn(_M):
    uid: Uid
    pack: Text
    item: Text
    passed: bool
    at: Time = Field(strict=False)
    code: str
    content_hash: Hash


class HintIn(_M):
    pack: Text
    item: Text
    hint: int = Field(ge=0, le=1000)
    at: Time = Field(strict=False)
    content_hash: Hash | None = None


class DraftIn(_M):
    pack: Text
    item: Text
    code: str
    updated_at: Time = Field(strict=False)
    content_hash: Hash | None = None


class ReviewIn(_M):
    uid: Uid
    pack: Text
    item: Text
    rating: int = Field(ge=1, le=4)
    correct: bool
    at: Time = Field(strict=False)
    duration_ms: int | None = Field(None, ge=0, le=MAX_COUNT)
    content_hash: Hash | None = None


class CardIn(_M):
    pack: Text
    item: Text
    state: int = Field(ge=1, le=3)
    step: int | None = Field(None, ge=0, le=MAX_COUNT)
    stability: float | None = Field(None, gt=0, strict=False, allow_inf_nan=False)
    difficulty: float | None = Field(None, strict=False, allow_inf_nan=False)
    due: Time = Field(strict=False)
    last_review: Time | None = Field(None, strict=False)
    first_review: Time = Field(strict=False)
    reps: int = Field(0, ge=0, le=MAX_COUNT)
    lapses: int = Field(0, ge=0, le=MAX_COUNT)
    content_hash: Hash | None = None

    def to_state(self) -> CardState:
        return CardState(
            pack=self.pack,
            item=self.item,
            state=State(self.state),
            step=self.step,
            stability=self.stability,
            difficulty=self.difficulty,
            due=self.due,
            last_review=self.last_review,
            first_review=self.first_review,
            reps=self.reps,
            lapses=self.lapses,
            content_hash=self.content_hash,
        )


class PositionIn(_M):
    pack: Text
    lesson: Text
    exercise: Text | None = None
    updated_at: Time = Field(strict=False)


class QuizLessonIn(_M):
    pack: Text
    lesson: Text
    how: Literal["opened", "named", "added"]
    at: Time = Field(strict=False)


class ExportDoc(_M):
    format: str
    version: int
    attempts: list[AttemptIn] = Field(default_factory=list)
    hints: list[HintIn] = Field(default_factory=list)
    drafts: list[DraftIn] = Field(default_factory=list)
    cards: list[CardIn] = Field(default_factory=list)
    reviews: list[ReviewIn] = Field(default_factory=list)
    position: PositionIn | None = None
    settings: dict[str, object] = Field(default_factory=dict)
    quiz_lessons: list[QuizLessonIn] = Field(default_factory=list)  # absent from older exports

    @field_validator("settings")
    @classmethod
    def _known_settings(cls, v: dict) -> dict:
        return {name: validate_setting(name, value) for name, value in v.items()}


# Bounds on a file to import: an export nests four levels deep and a year of daily work is
# a few megabytes, so anything past these is not an export (docs/limits.md).
MAX_EXPORT_BYTES = 64 * 1024 * 1024
MAX_EXPORT_DEPTH = 20


def parse(text: str) -> object:
    """The JSON of an export file, or ValueError with one sentence (never a RecursionError)."""
    if len(text) > MAX_EXPORT_BYTES:
        raise ValueError(f"it is larger than {MAX_EXPORT_BYTES:,} bytes (the limit for a progress export)")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"it is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except RecursionError:  # nested too deep even for the JSON parser
        raise ValueError(_TOO_DEEP) from None
    if _deeper_than(data, MAX_EXPORT_DEPTH):
        raise ValueError(_TOO_DEEP)
    return data


_TOO_DEEP = f"it nests deeper than {MAX_EXPORT_DEPTH} levels, so it is not a progress export"


def _deeper_than(data: object, limit: int) -> bool:
    """Iterative, so depth itself cannot overflow the stack."""
    stack = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth >= limit:
                return True
            children = value.values() if isinstance(value, dict) else value
            stack.extend((child, depth + 1) for child in children)
    return False


def validate(data: object) -> ExportDoc:
    """The document as models, or ValueError with one sentence naming the first problem."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError('it is not a ptfund-tutor progress export (no "format": "ptfund-tutor-progress")')
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ValueError('its "version" is missing or not a whole number')
    if version > VERSION:
        raise ValueError(f"it was exported by a newer ptfund-tutor (format version {version}); upgrade to import it")
    try:
        return ExportDoc.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) if isinstance(p, str) else f"[{p}]" for p in err["loc"]).replace(".[", "[")
        count = exc.error_count()
        more = f" (and {count - 1} more problem{'s' if count > 2 else ''})" if count > 1 else ""
        msg = err["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        raise ValueError(f"{where}: {msg[0].lower() + msg[1:]}{more}") from None
