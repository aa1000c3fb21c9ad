"""Editing the code in the learner's own editor ($VISUAL / $EDITOR), the terminal handed over."""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from tutor.files import TooLarge, Unreadable, read_bounded
from tutor.grading.code_size import MAX_CODE_BYTES, too_large

if TYPE_CHECKING:
    from textual.app import App


def editor_command() -> str:
    return os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"


def edit_externally(app: App[object], text: str, filename: str) -> str | None:
    """The text after the editor exits (read back whatever its exit status), or None when
    it could not run or left nothing usable; the app is told why in a notification and the
    draft stays as it was."""
    command = editor_command()
    with tempfile.TemporaryDirectory(prefix="ptfund-") as tmp:
        path = Path(tmp) / filename
        path.write_text(text, encoding="utf-8")
        try:
            with app.suspend():
                status = subprocess.call([*shlex.split(command), str(path)])
        except Exception as exc:  # no terminal to hand over (e.g. headless), or no such editor
            app.notify(f"Could not open {command}: {exc}", severity="error")
            return None
        edited, problem = _read_back(path)
    if problem is not None:
        app.notify(f"{problem}; your code is as it was before {command}.", severity="error", timeout=10)
        return None
    if status != 0:
        app.notify(f"{command} exited with status {status}; your code was read back anyway.", severity="warning")
    return edited


def _read_back(path: Path) -> tuple[str | None, str | None]:
    """(text, None) or (None, why not): editors can delete, rename, or re-encode the file."""
    try:
        data = read_bounded(path, MAX_CODE_BYTES)
    except TooLarge as exc:
        return None, too_large(exc.size, path.name)
    except Unreadable as exc:
        if exc.reason == "no such file":
            return None, f"{path.name} was deleted or renamed in the editor"
        if exc.reason.startswith("it is a folder"):
            return None, f"{path.name} became a folder in the editor"
        return None, f"{path.name} could not be read back ({exc.reason})"
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        return None, f"{path.name} was saved in an encoding other than UTF-8 (line {line})"
