"""Editing the code in the learner's own editor ($VISUAL / $EDITOR), the terminal handed over."""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from pathlib import Path


def editor_command() -> str:
    return os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"


def edit_externally(app, text: str, filename: str) -> str | None:
    """The text after the editor exits (read back whatever its exit status), or None when
    it could not run; the app is told why in a notification."""
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
        edited = path.read_text(encoding="utf-8")
    if status != 0:
        app.notify(f"{command} exited with status {status}; your code was read back anyway.", severity="warning")
    return edited
