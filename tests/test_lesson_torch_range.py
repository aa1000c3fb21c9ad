"""A lesson may need a narrower torch range than its pack (``torch:`` in lesson.yaml):
`pack validate` refuses a range that is not one, and `pack test` skips the lesson on a
torch outside it and says why, while the pack's other lessons run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tutor.grading.torchrange import installed_torch, outside_range
from tutor.packs import models as m
from tutor.packs.loader import check_pack
from tutor.packs.scaffold import new_pack


def lesson(torch: str | None) -> m.Lesson:
    return m.Lesson(id="amp", title="Mixed precision", intuition="# Mixed precision", torch=torch)


def test_a_lesson_outside_its_range_says_which_torch_it_needs():
    assert outside_range(lesson(">=2.4"), "2.2.2") == "needs torch >=2.4; this is torch 2.2.2"
    assert outside_range(lesson(">=2.4"), "2.13.0+cpu") is None  # a local build is its release
    assert outside_range(lesson("<2.4"), "2.13.0+cpu") == "needs torch <2.4; this is torch 2.13.0+cpu"
    assert outside_range(lesson(None), "2.2.2") is None  # no range of its own: the pack's
    assert outside_range(lesson(">=2.4"), "2.5.0rc1") is None  # a release candidate counts as its release


def with_range(tmp_path: Path, torch: str) -> Path:
    pack = new_pack(tmp_path / "demo")
    text = pack / "first-steps" / "lesson.yaml"
    text.write_text(
        text.read_text().replace("intuition: intuition.md\n", f'torch: "{torch}"\nintuition: intuition.md\n')
    )
    return pack


def test_pack_validate_names_a_range_that_is_not_one(tmp_path):
    _, problems = check_pack(with_range(tmp_path, "two point four"))
    assert len(problems) == 1 and problems[0].field == "torch", problems
    said = str(problems[0])
    assert "first-steps/lesson.yaml:5" in said and "torch" in said and "not a version range" in said, said


@pytest.mark.slow
def test_pack_test_skips_a_lesson_outside_its_range_and_says_why(tmp_path):
    pack = with_range(tmp_path, ">=99")
    env = {**os.environ, "PTFUND_TUTOR_HOME": str(tmp_path / "home")}
    run = [sys.executable, "-m", "tutor", "pack", "test", str(pack), "--trust"]
    done = subprocess.run(run, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "skip first-steps" in done.stdout and f"needs torch >=99; this is torch {installed_torch()}" in done.stdout
    assert "0 passed, 0 failed" in done.stdout and "1 lessons skipped for their torch range" in done.stdout
    done = subprocess.run([*run, "--json"], capture_output=True, text=True, env=env, timeout=300)
    report = json.loads(done.stdout)
    assert report["ok"] and report["rows"] == []
    assert report["lessons_skipped"] == [
        {"lesson": "first-steps", "reason": f"needs torch >=99; this is torch {installed_torch()}"}
    ]
