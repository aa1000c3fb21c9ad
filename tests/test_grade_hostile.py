"""A class that tries to break `grade`: files that are not files, links, text no file can
hold, names that are terminal escapes or spreadsheet formulas, JSON nested past reason, a
disk that refuses the gradebook, a cache someone else wrote. Each gets one sentence or a
harmless cell, never a hang, a traceback or a lost result.

None of these starts a kernel: every learner's cell here is refused or missing before any
code would run (those that start a `grade` process are marked slow all the same).
"""

from __future__ import annotations

import csv
import io
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.test_grade import LESSON, cli, exercises, export_doc

ESC_NAME = "\x1b]0;pwned\x07eve\x1b[2J"
FORMULA_NAME = '=HYPERLINK("evil.example","x")'


def grade_json(subs: Path, home: Path, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    r = cli("grade", str(subs), "--lesson", LESSON, "--json", *extra, home=home, timeout=120)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    return r, json.loads(r.stdout)


@pytest.mark.slow  # a `grade` process (no kernel: nothing here is run)
def test_fifos_devices_and_links_are_never_read(tmp_path):
    ex1, ex2, ex3 = exercises()
    folder = tmp_path / "subs" / "eve" / LESSON
    folder.mkdir(parents=True)
    os.mkfifo(folder / f"{ex1.id}.py")  # opening it for reading used to wait for a writer forever
    (folder / f"{ex2.id}.py").symlink_to("/dev/zero")  # used to be read until memory ran out
    solution = tmp_path / "instructor" / "solution.py"
    solution.parent.mkdir()
    solution.write_text(ex3.solution)
    (folder / f"{ex3.id}.py").symlink_to(solution)  # used to be read, run and pass
    r, book = grade_json(tmp_path / "subs", tmp_path / "home")
    cells = book["learners"][0]["verdicts"]
    assert {cell["grade"] for cell in cells.values()} == {"missing"}
    assert f"{ex1.id}.py cannot be read: it is a named pipe (FIFO), not a regular file" in r.stderr
    assert f"{ex2.id}.py cannot be read: it is a symbolic link, which is not followed" in r.stderr
    assert f"{ex3.id}.py cannot be read: it is a symbolic link, which is not followed" in r.stderr


@pytest.mark.slow  # a `grade` process (no kernel: nothing here is run)
def test_a_linked_learner_folder_is_not_followed(tmp_path):
    ex1 = exercises()[0]
    (tmp_path / "subs" / "amy" / LESSON).mkdir(parents=True)
    (tmp_path / "subs" / "amy" / LESSON / f"{ex1.id}.py").write_bytes(b"\xff\xfe not utf-8")
    (tmp_path / "subs" / "zed").symlink_to(tmp_path / "subs" / "amy")  # zed would hand in amy's work
    r, book = grade_json(tmp_path / "subs", tmp_path / "home")
    assert [lr["learner"] for lr in book["learners"]] == ["amy", "zed"]
    assert "zed: zed is a symbolic link, which is not followed" in r.stderr


@pytest.mark.slow  # a `grade` process (no kernel: nothing here is run)
def test_a_lone_surrogate_in_an_export_is_one_cell_not_the_class(tmp_path):
    ex1, ex2, _ = exercises()
    subs = tmp_path / "subs"
    subs.mkdir()
    # json.dumps writes "\ud800" as an escape: valid JSON whose text no file can hold.
    doc = export_doc([(ex1.id, "2024-05-01T12:00:00+00:00", "t = 1  # \ud800\n")])
    (subs / "amy.json").write_text(json.dumps(doc))
    (subs / "bob.json").write_text(json.dumps(export_doc([])))
    _, book = grade_json(subs, tmp_path / "home")
    amy, bob = book["learners"]
    cell = amy["verdicts"][f"{LESSON}/{ex1.id}"]
    assert cell["grade"] == "error" and "not valid Unicode" in cell["headline"]
    assert amy["verdicts"][f"{LESSON}/{ex2.id}"]["grade"] == "missing"
    assert bob["learner"] == "bob"


def gradescope_dir(tmp_path: Path, export: dict, metadata: str | None) -> Path:
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    (root / "submission" / "progress.json").write_text(json.dumps(export))
    if metadata is not None:
        (root / "submission_metadata.json").write_text(metadata)
    return root


@pytest.mark.slow  # a `grade` process (no kernel: nothing here is run)
def test_gradescope_survives_a_surrogate_and_metadata_nested_100000_deep(tmp_path):
    ex1 = exercises()[0]
    export = export_doc([(ex1.id, "2024-05-01T12:00:00+00:00", "\udcff = 1\n")])
    root = gradescope_dir(tmp_path, export, '{"users": ' + "[" * 100_000 + "]" * 100_000 + "}")
    r = cli("grade", "--gradescope", str(root), "--lesson", LESSON, home=tmp_path / "home", timeout=120)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    results = json.loads((root / "results" / "results.json").read_text())
    assert results["tests"][0]["tags"] == ["error"] and "not valid Unicode" in results["tests"][0]["output"]


@pytest.mark.slow  # a `grade` process (no kernel: nothing here is run)
def test_names_reach_the_terminal_and_the_csv_inert(tmp_path):
    ex1 = exercises()[0]
    subs = tmp_path / "subs"
    for name in (ESC_NAME, FORMULA_NAME, "-2+3", "@SUM(A1)"):
        (subs / name / LESSON).mkdir(parents=True)
        (subs / name / LESSON / f"{ex1.id}.txt").write_text("not an exercise file")
    (subs / ESC_NAME / LESSON / "\x1b[31mred.py").write_text("x = 1\n")
    r = cli("grade", str(subs), "--lesson", LESSON, "--out", str(tmp_path / "gb.csv"), home=tmp_path / "home")
    assert r.returncode == 0, r.stderr
    assert "\x1b" not in r.stderr and "\x07" not in r.stderr
    assert "\\x1b]0;pwned\\x07eve" in r.stderr  # still recognisable
    cells = [row[0] for row in csv.reader(io.StringIO((tmp_path / "gb.csv").read_text()))][1:]
    assert sorted(cells) == sorted(["'-2+3", "'@SUM(A1)", "'" + FORMULA_NAME, "\\x1b]0;pwned\\x07eve\\x1b[2J"])


def _limited_file_size() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (200, 200))  # writes past 200 bytes fail (EFBIG)


@pytest.mark.slow  # a `grade` process (no kernel: nothing here is run)
def test_a_gradebook_that_cannot_be_written_is_one_sentence_and_the_old_one_stays(tmp_path):
    subs = tmp_path / "subs"
    for i in range(20):
        (subs / f"learner-{i:02}").mkdir(parents=True)
    out = tmp_path / "gb.csv"
    out.write_text("the previous gradebook\n")
    env = {**os.environ, "PTFUND_TUTOR_HOME": str(tmp_path / "home")}
    env.pop("PTFUND_TUTOR_CACHE", None)
    r = subprocess.run(
        [sys.executable, "-m", "tutor", "grade", str(subs), "--lesson", LESSON, "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        preexec_fn=_limited_file_size,
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith(f"ptfund-tutor: cannot write {out}: ")
    assert out.read_text() == "the previous gradebook\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".gb.csv")] == []  # no half file left


@pytest.mark.slow  # a `grade` process (no kernel: nothing here is run)
def test_results_json_that_cannot_be_replaced_stays_whole(tmp_path):
    """An immutable results.json (chattr +i, which only root can set or clear) is one sentence."""
    if not shutil.which("chattr"):
        pytest.skip("no chattr here")
    root = gradescope_dir(tmp_path, export_doc([]), None)
    (root / "results").mkdir()
    results = root / "results" / "results.json"
    results.write_text('{"score": 99}')
    if subprocess.run(["chattr", "+i", str(results)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not allowed here (needs root and a file system that supports it)")
    try:
        r = cli("grade", "--gradescope", str(root), "--lesson", LESSON, home=tmp_path / "home", timeout=120)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert f"cannot write {results}: " in r.stderr and "previous results are unchanged" in r.stderr
        assert results.read_text() == '{"score": 99}'
    finally:
        subprocess.run(["chattr", "-i", str(results)], capture_output=True)


def test_cache_lines_the_tutor_did_not_write_are_ignored(tmp_path):
    from tutor.grading.gradecache import VerdictCache
    from tutor.grading.verdict import Verdict

    path, key_path = tmp_path / "verdicts.jsonl", tmp_path / "grade.key"
    with VerdictCache(path, key_path=key_path).load() as cache:
        cache.put("mine", Verdict("fail", "The check fails."))
        cache.put("classmate", Verdict("pass", "The check passes."))
    lines = path.read_text().splitlines()
    assert len(lines) == 2
    forged = [json.loads(line) for line in lines]
    forged[0]["verdict"]["status"] = "pass"  # learner code rewrote its own cached verdict
    forged[1]["verdict"]["status"] = "fail"  # ... and flipped a classmate's pass
    extra = {"key": "new", "verdict": {"status": "pass", "headline": "x"}, "mac": "0" * 64}
    path.write_text("".join(json.dumps(e) + "\n" for e in [*forged, extra]))
    again = VerdictCache(path, key_path=key_path).load()
    assert len(again) == 0 and again.get("mine") is None and again.get("classmate") is None
    again.put("mine", Verdict("fail", "The check fails."))
    again.close()  # rewritten whole: only what the tutor wrote is left
    assert [json.loads(line)["key"] for line in path.read_text().splitlines()] == ["mine"]
    assert VerdictCache(path, key_path=tmp_path / "other.key").load().get("mine") is None  # another key
    assert oct(key_path.stat().st_mode & 0o777) == "0o600"


# ---------------------------------------------------------------- pack text on a terminal


def test_pack_text_reaches_the_terminal_inert(tmp_path, capsys):
    from tutor.cli import main
    from tutor.packs.scaffold import new_pack

    root = new_pack(tmp_path / "pack")
    lesson = root / "first-steps" / "lesson.yaml"
    text = lesson.read_text()
    lesson.write_text(text.replace("title: First steps with tensors", 'title: "First \\e]0;pwned\\a steps"'))
    assert main(["--pack", str(root), "list"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "First \\x1b]0;pwned\\x07 steps" in out

    lesson.write_text(text.replace("summary:", '"\\e[2Jwipe": 1\nsummary:'))
    assert main(["pack", "validate", str(root)]) == 1
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\\x1b[2Jwipe" in out


# ---------------------------------------------------------------- the tutor's own faults


def _poll(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.1)


def _fork_servers_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pid and b"tutor.engine.forkserver" in cmdline:
            found.append(int(entry.name))
    return found


@pytest.mark.slow
def test_the_fork_server_killed_mid_grade_is_not_the_learners_crash(tmp_path):
    """Its kernels die with it: the verdict in flight is verified again, never cached as a crash."""
    ex1 = exercises()[0]
    mark = tmp_path / "running"
    code = f"import pathlib, time\npathlib.Path({str(mark)!r}).touch()\ntime.sleep(3)\n" + ex1.solution
    subs = tmp_path / "subs"
    (subs / "amy" / LESSON).mkdir(parents=True)
    (subs / "amy" / LESSON / f"{ex1.id}.py").write_text(code)
    env = {**os.environ, "PTFUND_TUTOR_HOME": str(tmp_path / "home")}
    env.pop("PTFUND_TUTOR_CACHE", None)
    env["PTFUND_TUTOR_NO_CONFINE"] = "all"  # the learner's code signals through a file outside its scratch dir
    argv = [sys.executable, "-m", "tutor", "grade", str(subs), "--lesson", LESSON, "--timeout", "120", "--json"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        _poll(mark.exists, 300, "the learner's code to start")
        servers = _fork_servers_of(proc.pid)
        if not servers:
            pytest.skip("kernels here are not forked from a fork server")
        mark.unlink()
        for pid in servers:
            os.kill(pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0 and "Traceback" not in err, err
    assert mark.exists()  # the code ran again, on a fresh kernel
    cell = json.loads(out)["learners"][0]["verdicts"][f"{LESSON}/{ex1.id}"]
    assert cell["grade"] == "pass", cell
    cached = (tmp_path / "home" / "cache" / "grade" / "verdicts.jsonl").read_text()
    assert '"crashed"' not in cached and '"pass"' in cached


DAEMON = """import os, pathlib, time
if os.fork() == 0:
    os.setsid()  # out of the kernel's process group and session
    if os.fork() == 0:
        pathlib.Path({pidfile!r}).write_text(str(os.getpid()))
        time.sleep(30)
        pathlib.Path({target!r}).write_text("learner,forged\\n")  # the gradebook, rewritten
    os._exit(0)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


@pytest.mark.slow
def test_a_daemon_started_by_learner_code_does_not_outlive_grade(tmp_path, monkeypatch):
    # Unconfined, as where the platform gives no confinement: the daemon reports its pid
    # through a file outside its scratch directory, and grade's subreaper must end it.
    # tests/test_confinement.py proves the confined case.
    monkeypatch.setenv("PTFUND_TUTOR_NO_CONFINE", "all")
    ex1 = exercises()[0]
    pidfile, out = tmp_path / "daemon.pid", tmp_path / "gb.csv"
    subs = tmp_path / "subs"
    (subs / "amy" / LESSON).mkdir(parents=True)
    code = DAEMON.format(pidfile=str(pidfile), target=str(out)) + ex1.wrong_solutions[0].code
    (subs / "amy" / LESSON / f"{ex1.id}.py").write_text(code)
    r = cli("grade", str(subs), "--lesson", LESSON, "--out", str(out), home=tmp_path / "home")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    pid = int(_poll(lambda: pidfile.exists() and pidfile.read_text(), 60, "the daemon's pid"))
    try:
        assert not _alive(pid), "the daemon outlived grade"
    finally:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
    assert "forged" not in out.read_text() and ",fail," in out.read_text()


def test_doctor_says_whether_learner_code_could_write_the_tutors_files(tmp_path):
    from tutor.grading.exposure import exposure, writable_by

    install = tmp_path / "install"
    (install / "grading").mkdir(parents=True)
    (install / "grading" / "gradescope.py").write_text("")
    for path in (tmp_path, install, install / "grading"):
        path.chmod(0o755)
    (install / "grading" / "gradescope.py").chmod(0o644)
    owner = tmp_path.stat().st_uid
    other = 65534 if owner != 65534 else 65533
    assert not writable_by(install, other, {other})
    assert writable_by(install, owner, set()) or owner == 0
    (install / "grading" / "gradescope.py").chmod(0o646)  # learner code could patch the grader
    assert writable_by(install, other, {other})
    assert "grading rests on the kernel's confinement" in exposure(tmp_path, uid=0, gids={0})


def test_a_pack_file_named_in_no_encoding_is_hashed_for_trust(tmp_path):
    from tutor.packs.scaffold import new_pack
    from tutor.packs.trust import pack_digest

    root = new_pack(tmp_path / "pack")
    before = pack_digest(root)
    (root / "first-steps" / os.fsdecode(b"\xff\xfe notes.txt")).write_text("x")  # a name that is not UTF-8
    after = pack_digest(root)
    assert after != before and pack_digest(root) == after
