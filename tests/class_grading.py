"""Learner files graded as one class by `grade` in fresh kernels, for tests that read the
verdicts: each case (``name``, ``exercise`` as LESSON/EXERCISE, ``code``) is one learner."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def grade_cases(pack: Path, cases, tmp: Path) -> dict:
    """Every case as one learner of a class, graded in fresh kernels: {case name: verdict}."""
    submissions = tmp / "class"
    for case in cases:
        lesson, exercise = case.exercise.split("/")
        folder = submissions / case.name / lesson
        folder.mkdir(parents=True)
        (folder / f"{exercise}.py").write_text(case.code)
    env = {**os.environ, "PTFUND_TUTOR_HOME": str(tmp / "home"), "PTFUND_TUTOR_CACHE": str(tmp / "cache")}
    grade = ["grade", str(submissions), "--json", "--trust", "--no-cache"]  # verdicts of this code only
    args = [sys.executable, "-m", "tutor", "--pack", str(pack), *grade]
    r = subprocess.run(args, capture_output=True, text=True, env=env, cwd=REPO, timeout=1200)
    assert r.stdout.startswith("{"), r.stderr[-3000:]
    report = json.loads(r.stdout)
    out = {}
    for learner in report["learners"]:
        case = next(c for c in cases if c.name == learner["learner"])
        out[case.name] = learner["verdicts"][case.exercise]
    return out
