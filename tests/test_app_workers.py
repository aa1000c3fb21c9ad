"""Every worker group the app starts has a few words in WORKER_WHAT, so a failure in the
background says what failed, never just "A background task failed"."""

from __future__ import annotations

import ast
from pathlib import Path

from tutor.app.app import WORKER_WHAT

APP = Path(__file__).resolve().parent.parent / "tutor" / "app"


def worker_groups() -> dict[str, str]:
    """group -> where it is first used, for every ``group="..."`` in a call in tutor/app
    (``@work(group=...)`` and ``run_worker(..., group=...)`` alike)."""
    found: dict[str, str] = {}
    for path in sorted(APP.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call):
                continue
            for kw in node.keywords:
                if kw.arg == "group" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                    found.setdefault(kw.value.value, f"{path.relative_to(APP.parent.parent)}:{node.lineno}")
                elif kw.arg == "group":
                    raise AssertionError(f"{path}:{node.lineno}: a worker group must be a literal string")
    return found


def test_every_worker_group_says_what_failed():
    groups = worker_groups()
    assert {"startup", "check", "figure", "home-add-cards", "quiz-lessons"} <= set(groups)  # the scan finds them
    missing = {group: where for group, where in groups.items() if group not in WORKER_WHAT}
    assert not missing, f"worker groups without an entry in WORKER_WHAT: {missing}"
