"""The learner's settings kept in the progress store, and what values each may take.

Standard library only: the store validates a setting before writing it, and an import
validates the settings of an export with the same rules.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
from dataclasses import dataclass
from typing import Any

from fsrs.scheduler import DEFAULT_PARAMETERS

from tutor.progress.scheduling import DEFAULT_NEW_PER_DAY, DEFAULT_RETENTION


@dataclass(frozen=True)
class Settings:
    desired_retention: float = DEFAULT_RETENTION
    new_cards_per_day: int = DEFAULT_NEW_PER_DAY
    # The language packs are shown in where a translation offers it ("": each pack's own).
    language: str = ""
    # FSRS parameters fitted by `progress optimize` (None: fsrs's defaults), and the ones
    # in use before the last optimize, kept so that `progress optimize --restore` can go back.
    fsrs_parameters: tuple[float, ...] | None = None
    fsrs_parameters_previous: tuple[float, ...] | None = None


LANGUAGE_TAG = re.compile(r"[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*")


def validate_setting(name: str, value: object) -> object:
    """The value to store, or ValueError with one sentence for the learner."""
    if name == "desired_retention":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.7 <= float(value) <= 0.99:
            raise ValueError("desired retention must be a number between 0.7 and 0.99")
        return float(value)
    if name == "new_cards_per_day":
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 1000:
            raise ValueError("new cards per day must be a whole number between 0 and 1000")
        return value
    if name == "language":
        if not isinstance(value, str) or not (value == "" or LANGUAGE_TAG.fullmatch(value)):
            raise ValueError("language must be a language tag such as en, de or pt-BR (or empty for each pack's own)")
        return value
    if name in ("fsrs_parameters", "fsrs_parameters_previous"):
        if value is None:
            return None
        if (
            not isinstance(value, (list, tuple))
            or len(value) != len(DEFAULT_PARAMETERS)
            or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in value)
        ):
            raise ValueError(f"FSRS parameters must be a list of {len(DEFAULT_PARAMETERS)} numbers")
        return tuple(float(x) for x in value)
    raise ValueError(f"unknown setting {name!r}")


def read_settings(c: sqlite3.Connection) -> Settings:
    """The stored settings; an unknown or bad value falls back to its default."""
    values: dict[str, Any] = {}
    for name, value in c.execute("SELECT name, value FROM settings"):
        try:
            values[name] = validate_setting(name, json.loads(value))
        except ValueError:
            continue  # an unknown or bad value falls back to the default
    return Settings(**values)
