"""`pack test` starts the exercises that were slowest in the pack's last run first, so the
workers finish together; the times live in a small file in the cache dir."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tutor.grading import packtimes
from tutor.grading.packtest import test_pack as run_pack_test
from tutor.packs.loader import check_pack
from tutor.packs.scaffold import new_pack


def test_slowest_first_puts_unknown_then_slow_first_and_keeps_ties_in_order():
    keys = ["a", "b", "c", "d", "e"]
    times = {"a": 1.0, "b": 5.0, "d": 1.0, "e": 3.0}
    assert [keys[i] for i in packtimes.slowest_first(keys, times)] == ["c", "b", "e", "a", "d"]
    assert packtimes.slowest_first(keys, {}) == [0, 1, 2, 3, 4]  # the first run: the pack's order


def test_times_are_kept_per_pack_and_bad_files_are_ignored(tmp_path: Path):
    path = tmp_path / "times.json"
    one, two = tmp_path / "one", tmp_path / "two"
    assert packtimes.load(one, path) == {}
    packtimes.save(one, {"l/x": 1.23456}, path)
    packtimes.save(two, {"l/y": 2.0}, path)
    assert packtimes.load(one, path) == {"l/x": 1.235}
    assert packtimes.load(two, path) == {"l/y": 2.0}
    for bad in ("{not json", "[1, 2]", json.dumps({str(one.resolve()): {"l/x": "slow", "l/z": -1}})):
        path.write_text(bad)
        assert packtimes.load(one, path) == {}
    path.write_text(" " * (packtimes.MAX_BYTES + 1))
    assert packtimes.load(one, path) == {}
    packtimes.save(one, {"l/x": 1.0}, path)  # a bad file is replaced, not a reason to fail
    assert packtimes.load(one, path) == {"l/x": 1.0}


PREDICT_CARD = """  - id: sum-of-ones
    type: predict
    prompt: What does this print?
    teaches: Shape and dtype
    code: |
      import torch
      print(torch.ones(3).sum().item())
    expected: "3.0"
"""


@pytest.mark.slow
def test_pack_test_starts_the_exercise_slowest_last_time_first(tmp_path: Path):
    root = new_pack(tmp_path / "demo")
    lesson = root / "first-steps" / "lesson.yaml"
    lesson.write_text(lesson.read_text().replace("cards:\n", "cards:\n" + PREDICT_CARD, 1))
    pack, problems = check_pack(root)
    assert pack is not None and not problems, problems

    def first_started(times: dict[str, float]) -> str:
        packtimes.save(root, times)
        seen: list[str] = []
        # Mutants off: each exercise's mutants are items of their own, with times of their own.
        report = asyncio.run(run_pack_test(pack, jobs=1, echo=lambda row: seen.append(row.item), mutants="off"))
        assert report.ok, [r for r in report.rows if not r.ok]
        assert report.rows[0].item == "first-steps/zeros"  # the report keeps the pack's order
        return seen[0]

    assert first_started({"first-steps/zeros": 0.1, "first-steps/sum-of-ones": 9.0}) == "first-steps/sum-of-ones"
    assert first_started({"first-steps/zeros": 9.0, "first-steps/sum-of-ones": 0.1}) == "first-steps/zeros"
    recorded = packtimes.load(root)
    assert set(recorded) == {"first-steps/zeros", "first-steps/sum-of-ones"}
    assert all(0 < t < 9.0 for t in recorded.values())  # this run's own times replaced the ones made up


@pytest.mark.slow
def test_a_case_the_machine_held_past_its_limit_is_verified_again(tmp_path: Path, monkeypatch):
    """A stall that is not the pack's (a busy machine, a disk that stops answering) can hold
    a kernel past its limit: pack test verifies such a case again, and only a time-out that
    happens again fails the pack."""
    from tutor.grading.verdict import Verdict
    from tutor.grading.verify import Verifier

    pack, problems = check_pack(new_pack(tmp_path / "demo"))
    assert pack is not None and not problems, problems
    zeros = next(ex for ex in pack.lessons[0].exercises if ex.id == "zeros")
    real = Verifier.verify
    stalls = {"left": 1}

    async def stalled_once(self, exercise, code, **kwargs):
        if exercise.id == "zeros" and code == zeros.solution and stalls["left"]:
            stalls["left"] -= 1
            return Verdict("timeout", "Your code did not finish within the 20 s time limit.")
        return await real(self, exercise, code, **kwargs)

    monkeypatch.setattr(Verifier, "verify", stalled_once)
    report = asyncio.run(run_pack_test(pack, jobs=1, mutants="off", times=False))
    assert report.ok, [r for r in report.rows if not r.ok]
    assert stalls["left"] == 0  # the stall happened, and the case was verified again

    stalls["left"] = 2  # the same time-out twice: the pack's
    report = asyncio.run(run_pack_test(pack, jobs=1, mutants="off", times=False))
    failed = [r for r in report.rows if not r.ok]
    assert [(r.item, r.case) for r in failed] == [("first-steps/zeros", "solution")]
    assert "did not finish within the 20 s time limit" in failed[0].detail
