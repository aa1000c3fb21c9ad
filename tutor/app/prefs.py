"""The learner's UI preferences (theme), kept beside the progress database.

Not progress, so not in SQLite: losing this file only resets the theme.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from tutor.jsonfile import read_json, write_json

FILENAME = "ui.json"


@dataclass
class Prefs:
    theme: str | None = None

    @classmethod
    def load(cls, data_dir: Path) -> Prefs:
        data = read_json(Path(data_dir) / FILENAME)
        theme = data.get("theme") if isinstance(data, dict) else None
        return cls(theme=theme if isinstance(theme, str) else None)

    def save(self, data_dir: Path) -> None:
        write_json(Path(data_dir) / FILENAME, asdict(self))
