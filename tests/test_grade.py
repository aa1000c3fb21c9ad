"""`grade` end to end: real kernels, real torch, the built-in pack's tensors lesson."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tutor.packs.catalog import Catalog

LESSON = "tensors"
LOOP = "while True:\n    pass\n"
CRASH = "import os\nos._exit(3)\n"
FLOOD = "print('spam\\n' * 100000)\nfor i in range(5000):\n    print('spam', i)\n"


def cli(*args: str, home: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PTFUND_TUTOR_HOME": str(home)}
    env.pop("PTFUND_TUTOR_CACHE", None)  # the cache lives in the test's home
    return subprocess.run(
        [sys.executable, "-m", "tutor", *args], capture_output=True, text=True, env=env, timeout=timeout
    )


def exercises():
    return [r.exercise for r in Catalog.load().exercises(LESSON)]


def write(root: Path, learner: str, exercise_id: str, code: str) -> Path:
    path = root / learner / LESSON / f"{exercise_id}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(code)
    return path


def export_doc(attempts: list[tuple[str, str, str]]) -> dict:
    """A progress export with (exercise id, time, code) attempts."""
    return {
        "format": "ptfund-tutor-progress",
        "version": 1,
        "attempts": [
            {
                "uid": f"a{i}",
                "pack": "pytorch-fundamentals",
                "item": f"{LESSON}/{ex}",
                "passed": False,
                "at": at,
                "code": code,
                "content_hash": "",
            }
            for i, (ex, at, code) in enumerate(attempts)
        ],
    }


def rows(text: str) -> dict[str, dict[str, str]]:
    return {r["learner"]: r for r in csv.DictReader(io.StringIO(text))}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """One class graded once (the expensive part); the tests read its results."""
    root = tmp_path_factory.mktemp("class")
    home = root / "home"
    subs = root / "subs"
    ex1, ex2, ex3 = exercises()
    for ex in (ex1, ex2, ex3):
        write(subs, "alice", ex.id, ex.solution)
        write(subs, "bob", ex.id, ex.starter)
    write(subs, "carol", ex1.id, ex1.wrong_solutions[0].code)
    write(subs, "carol", ex2.id, LOOP)
    write(subs, "carol", ex3.id, CRASH)
    write(subs, "dave", ex1.id, FLOOD + ex1.solution)
    write(subs, "dave", "not-an-exercise", "x = 1\n")
    # erin hands in her progress export: her last attempt at ex2 passes, the earlier one did not
    (subs / "erin.json").write_text(
        json.dumps(
            export_doc(
                [
                    (ex2.id, "2026-01-01T10:00:00+00:00", ex2.starter),
                    (ex2.id, "2026-01-01T11:00:00+00:00", ex2.solution),
                ]
            )
        )
    )
    out = root / "book.csv"
    args = ("grade", str(subs), "--lesson", LESSON, "--jobs", "2", "--timeout", "8", "--out", str(out), "--json")
    first = cli(*args, home=home)
    return {"root": root, "home": home, "subs": subs, "out": out, "args": args, "first": first, "ex": (ex1, ex2, ex3)}


@pytest.mark.slow
def test_gradebook_rows_and_isolation(graded):
    r = graded["first"]
    assert r.returncode == 0, r.stderr
    ex1, ex2, ex3 = graded["ex"]
    book = rows(graded["out"].read_text())
    cols = [f"{LESSON}/{ex.id}" for ex in (ex1, ex2, ex3)]
    assert list(next(iter(book.values())).keys()) == ["learner", *cols, "passed", "total"]
    assert [book["alice"][c] for c in cols] == ["pass", "pass", "pass"]
    assert book["alice"]["passed"] == "3" and book["alice"]["total"] == "3"
    assert all(book["bob"][c] in ("fail", "error") for c in cols)
    # one learner's wrong code, endless loop and crash are that learner's verdicts only
    assert [book["carol"][c] for c in cols] == ["fail", "timeout", "crash"]
    # a flood of output does not stop a correct solution from passing
    assert [book["dave"][c] for c in cols] == ["pass", "missing", "missing"]
    assert [book["erin"][c] for c in cols] == ["missing", "pass", "missing"]
    assert "dave: tensors/not-an-exercise.py matches no exercise in use" in r.stderr
    # no terminal: one line per learner
    assert "alice: 3/3 pass" in r.stderr
    assert "cache" in r.stderr and "verdicts.jsonl" in r.stderr


@pytest.mark.slow
def test_json_has_every_verdict_with_checks(graded):
    data = json.loads(graded["first"].stdout)
    by = {lr["learner"]: lr for lr in data["learners"]}
    ex1 = graded["ex"][0]
    carol = by["carol"]["verdicts"][f"{LESSON}/{ex1.id}"]
    assert carol["grade"] == "fail" and carol["status"] == "fail"
    assert carol["checks"] and any(not c["passed"] and c["message"] for c in carol["checks"])
    assert carol["cached"] is False
    assert by["dave"]["verdicts"][f"{LESSON}/{ex1.id}"]["output"]  # what the code printed, capped
    assert data["packs"] == [{"id": "pytorch-fundamentals", "version": Catalog.load().packs[0].manifest.version}]


@pytest.mark.slow
def test_rerun_reuses_verdicts_and_verifies_changed_files(graded):
    ex1, ex2, _ = graded["ex"]
    # bob fixed one exercise (his own words: alice's identical file would be a cache hit)
    write(graded["subs"], "bob", ex1.id, ex1.solution + "\n# fixed it\n")
    r = cli(*graded["args"], home=graded["home"])
    assert r.returncode == 0, r.stderr
    by = {lr["learner"]: lr for lr in json.loads(r.stdout)["learners"]}
    fresh = [
        (lr, name)
        for lr, v in by.items()
        for name, cell in v["verdicts"].items()
        if cell["grade"] != "missing" and not cell["cached"]
    ]
    assert fresh == [("bob", f"{LESSON}/{ex1.id}")]
    assert by["bob"]["verdicts"][f"{LESSON}/{ex1.id}"]["grade"] == "pass"
    assert by["carol"]["verdicts"][f"{LESSON}/{ex2.id}"]["grade"] == "timeout"


@pytest.mark.slow
def test_a_terminal_gets_a_progress_bar(graded):
    import pty

    leader, follower = pty.openpty()
    env = {**os.environ, "PTFUND_TUTOR_HOME": str(graded["home"])}
    env.pop("PTFUND_TUTOR_CACHE", None)
    try:
        r = subprocess.run(
            [sys.executable, "-m", "tutor", *graded["args"]],
            stdout=subprocess.PIPE,
            stderr=follower,
            env=env,
            timeout=300,
        )
        os.close(follower)
        follower = -1
        chunks = []
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
    finally:
        if follower != -1:
            os.close(follower)
        os.close(leader)
    assert r.returncode == 0
    shown = b"".join(chunks).decode(errors="replace")
    assert "\r[" in shown and "learners" in shown
    assert "alice: 3/3 pass" not in shown  # the bar replaces the per-learner lines


@pytest.mark.slow
def test_gradescope_results_json(graded):
    ex1, ex2, _ = graded["ex"]
    autograder = graded["root"] / "autograder"
    write(autograder, "submission", ex1.id, ex1.solution)  # -> autograder/submission/tensors/...
    write(autograder, "submission", ex2.id, ex2.starter)
    (autograder / "submission_metadata.json").write_text(json.dumps({"users": [{"name": "Alice A"}]}))
    r = cli("grade", "--gradescope", str(autograder), "--lesson", LESSON, home=graded["home"])
    assert r.returncode == 0, r.stderr
    results = json.loads((autograder / "results" / "results.json").read_text())
    tests = results["tests"]
    assert [t["status"] for t in tests] == ["passed", "failed", "failed"]
    assert [t["score"] for t in tests] == [1.0, 0.0, 0.0]
    assert all(t["max_score"] == 1.0 and t["name"].startswith(f"{LESSON}/") for t in tests)
    assert "The check passes" in tests[0]["output"] or "pass" in tests[0]["output"]
    assert "No solution handed in" in tests[2]["output"]
    assert results["score"] == 1.0


def test_bad_input_is_one_sentence(tmp_path):
    r = cli("grade", str(tmp_path / "nope"), home=tmp_path / "home")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"ptfund-tutor: cannot read submissions in {tmp_path / 'nope'}: no such folder"
    ]
    r = cli("grade", str(tmp_path), "--lesson", "no-such-lesson", home=tmp_path / "home")
    assert r.returncode == 2 and "no lesson 'no-such-lesson'" in r.stderr
    r = cli("grade", home=tmp_path / "home")
    assert r.returncode == 2 and "SUBMISSIONS" in r.stderr
    r = cli("grade", str(tmp_path), "--gradescope", str(tmp_path), home=tmp_path / "home")
    assert r.returncode == 2
    r = cli("--kernel", "k.json", "grade", str(tmp_path), home=tmp_path / "home")
    assert r.returncode == 2 and "fresh kernel" in r.stderr and "--gateway" in r.stderr


def test_oversized_file_is_not_run(tmp_path):
    from tutor.grading.code_size import MAX_CODE_BYTES

    ex1 = exercises()[0]
    write(tmp_path / "subs", "zed", ex1.id, "#" * (MAX_CODE_BYTES + 1))
    r = cli("grade", str(tmp_path / "subs"), "--lesson", LESSON, "--json", home=tmp_path / "home")
    assert r.returncode == 0, r.stderr
    cell = json.loads(r.stdout)["learners"][0]["verdicts"][f"{LESSON}/{ex1.id}"]
    assert cell["grade"] == "error" and "limit" in cell["headline"]


@pytest.mark.slow
async def test_a_throwaway_kernel_is_left_dead_after_a_crash():
    """grade's kernels are thrown away after one verdict: none is restarted for nobody."""
    from tutor.engine import KernelSession

    session = KernelSession(recover=False)
    try:
        await session.start()
        r = await session.execute("import os\nos._exit(3)", timeout=30)
        assert r.status == "crashed"
        assert session.state == "dead"
        assert not await session.is_alive()
    finally:
        await session.shutdown()


def test_an_untrusted_pack_asks_for_trust(tmp_path):
    from tutor.packs.scaffold import new_pack

    pack = new_pack(tmp_path / "demo")
    (tmp_path / "subs" / "amy").mkdir(parents=True)
    r = cli("--pack", str(pack), "grade", str(tmp_path / "subs"), home=tmp_path / "home")
    assert r.returncode == 2
    assert "contains Python that would run on this machine" in r.stderr and "--trust" in r.stderr


def test_cache_keys_follow_code_pack_version_and_tutor_version(tmp_path, monkeypatch):
    import dataclasses

    from tutor.grading import gradecache
    from tutor.grading.gradecache import VerdictCache, verdict_key
    from tutor.grading.verdict import CheckLine, Verdict

    ref = next(Catalog.load().exercises(LESSON))
    key = verdict_key(ref, "x = 1\n", timeout=None, device=None)
    assert verdict_key(ref, "x = 1\n", timeout=None, device=None) == key
    assert verdict_key(ref, "x = 2\n", timeout=None, device=None) != key
    assert verdict_key(ref, "x = 1\n", timeout=3.0, device=None) != key
    newer = dataclasses.replace(ref.pack, manifest=ref.pack.manifest.model_copy(update={"version": "99.0"}))
    assert verdict_key(dataclasses.replace(ref, pack=newer), "x = 1\n", timeout=None, device=None) != key
    monkeypatch.setattr(gradecache, "__version__", "99.0")
    assert verdict_key(ref, "x = 1\n", timeout=None, device=None) != key

    path = tmp_path / "verdicts.jsonl"
    verdict = Verdict("fail", "The check fails.", checks=[CheckLine("c1", "values", False, "t differs")])
    key_path = tmp_path / "grade.key"
    with VerdictCache(path, key_path=key_path).load() as cache:
        cache.put("k1", verdict)
    with open(path, "a") as f:
        f.write('{"key": "k2", "verd')  # a run cut short mid-line
    again = VerdictCache(path, key_path=key_path).load()
    assert len(again) == 1
    assert again.get("k1") == verdict
    assert again.get("k2") is None
