"""`check` and `pack test` end to end: real kernels, real torch, real SQLite."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tutor.packs.scaffold import new_pack

REPO = Path(__file__).resolve().parent.parent

GOOD = "import torch\nt = torch.zeros(2, 3, dtype=torch.float64, device=DEVICE)\n"
FLOAT32 = "import torch\nt = torch.zeros(2, 3, device=DEVICE)\n"


def cli(*args: str, home: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PTFUND_TUTOR_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "tutor", *args], capture_output=True, text=True, env=env, timeout=timeout
    )


@pytest.fixture(scope="module")
def pack(tmp_path_factory) -> Path:
    return new_pack(tmp_path_factory.mktemp("packs") / "demo")


@pytest.fixture
def home(tmp_path) -> Path:
    return tmp_path / "home"


def write(tmp_path: Path, code: str) -> Path:
    f = tmp_path / "answer.py"
    f.write_text(code)
    return f


@pytest.mark.slow
def test_check_pass_and_fail_with_targeted_message(pack, home, tmp_path):
    r = cli(
        "--pack",
        str(pack),
        "check",
        "demo:first-steps/zeros",
        "--file",
        str(write(tmp_path, GOOD)),
        "--trust",
        home=home,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "first-steps/zeros: The check passes." in r.stdout
    r = cli(
        "--pack",
        str(pack),
        "check",
        "demo:first-steps/zeros",
        "--file",
        str(write(tmp_path, FLOAT32)),
        "--json",
        home=home,
    )
    assert r.returncode == 1, r.stdout + r.stderr
    data = json.loads(r.stdout)
    assert data["passed"] is False and data["status"] == "fail"
    assert data["mistakes"][0] == "t is float32, the default: pass dtype=torch.float64."
    failed = [c for c in data["checks"] if not c["passed"]]
    assert "float32" in failed[0]["message"] and "float64" in failed[0]["message"]
    # both attempts were recorded in the store
    from tutor.progress.store import ProgressStore

    with ProgressStore.open(home) as store:
        attempts = store.attempts_for("demo", "first-steps/zeros")
    assert [a.passed for a in attempts] == [True, False]


@pytest.mark.slow
def test_check_learner_exception_shows_their_own_lines(pack, home, tmp_path):
    cli(
        "--pack",
        str(pack),
        "check",
        "demo:first-steps/zeros",
        "--file",
        str(write(tmp_path, GOOD)),
        "--trust",
        home=home,
    )
    code = "import torch\n\ndef make():\n    return torch.zeros(2, 3).view(4)\n\nt = make()\n"
    r = cli(
        "--pack", str(pack), "check", "first-steps/zeros", "--file", str(write(tmp_path, code)), "--json", home=home
    )
    assert r.returncode == 1
    data = json.loads(r.stdout)
    assert data["status"] == "error" and "RuntimeError" in data["headline"]
    assert "line 6" in data["headline"] or "line 4" in data["headline"]
    assert (
        "<your code>" in data["error"]
        and "ptfund_checks" not in data["error"]
        and "run_verification" not in data["error"]
    )


@pytest.mark.slow
def test_check_time_limit_is_a_verdict_not_a_hang(pack, home, tmp_path):
    cli(
        "--pack",
        str(pack),
        "check",
        "demo:first-steps/zeros",
        "--file",
        str(write(tmp_path, GOOD)),
        "--trust",
        home=home,
    )
    r = cli(
        "--pack",
        str(pack),
        "check",
        "first-steps/zeros",
        "--file",
        str(write(tmp_path, "while True:\n    pass\n")),
        "--timeout",
        "2",
        home=home,
        timeout=120,
    )
    assert r.returncode == 1
    assert "still looping at line 1 (`while True:`) when the 2 s time limit came" in r.stdout


def test_check_untrusted_pack_asks_first(pack, home, tmp_path):
    r = cli("--pack", str(pack), "check", "first-steps/zeros", "--file", str(write(tmp_path, GOOD)), home=home)
    assert r.returncode == 2 and "--trust" in r.stderr and r.stderr.count("\n") == 1


@pytest.mark.slow
def test_pack_test_untrusted_pack_refuses_without_a_terminal(pack, home):
    r = cli("pack", "test", str(pack), home=home)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "contains Python that would run on this machine" in r.stderr
    assert "--trust" in r.stderr


def on_terminal(*args: str, answer: bytes, home: Path) -> tuple[int, str, str]:
    """Run the CLI with stdin and stderr on a pseudo-terminal, answering its question."""
    import pty

    env = {**os.environ, "PTFUND_TUTOR_HOME": str(home)}
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tutor", *args], stdin=slave, stdout=subprocess.PIPE, stderr=slave, env=env
    )
    os.close(slave)
    seen = b""
    while b"[y/N]" not in seen:
        chunk = os.read(master, 4096)
        assert chunk, seen
        seen += chunk
    os.write(master, answer + b"\n")
    while True:  # drain the terminal until the child closes it
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    out = proc.stdout.read().decode()
    return proc.wait(timeout=300), out, seen.decode(errors="replace")


@pytest.mark.slow
def test_pack_test_asks_on_a_terminal_and_no_means_nothing_runs(pack, home):
    rc, out, term = on_terminal("pack", "test", str(pack), answer=b"n", home=home)
    assert "Trust it? [y/N]" in term
    assert rc == 2 and out == "" and "run again with --trust" in term


@pytest.mark.slow
def test_pack_test_asks_on_a_terminal_and_yes_trusts_and_runs(pack, home):
    rc, out, term = on_terminal("pack", "test", str(pack), answer=b"y", home=home)
    assert rc == 0, term
    assert "passed, 0 failed" in out
    assert "demo" in (home / "trusted-packs.json").read_text()


@pytest.mark.slow
def test_check_refuses_oversized_code_in_one_sentence(pack, home, tmp_path):
    from tutor.grading.code_size import MAX_CODE_BYTES

    big = tmp_path / "big.py"
    big.write_text("x = 1\n" * (MAX_CODE_BYTES // 6 + 1))
    r = cli("--pack", str(pack), "check", "first-steps/zeros", "--file", str(big), "--trust", home=home)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and f"over the {MAX_CODE_BYTES:,}-byte limit for a solution" in r.stderr
    assert "loop" not in r.stderr


@pytest.mark.slow
def test_check_verdict_stands_when_the_attempt_cannot_be_saved(pack, home, tmp_path):
    import sqlite3

    home.mkdir(parents=True)
    db = home / "progress.sqlite3"
    with sqlite3.connect(db) as conn:  # a database from a newer ptfund-tutor
        conn.execute("PRAGMA user_version = 999")
    answer = str(write(tmp_path, GOOD))
    r = cli("--pack", str(pack), "check", "first-steps/zeros", "--file", answer, "--trust", home=home)
    assert r.returncode == 0 and "first-steps/zeros" in r.stdout, r.stderr
    assert r.stderr.count("\n") == 1 and "this attempt was not saved" in r.stderr and "newer" in r.stderr


@pytest.mark.slow
def test_check_verdict_stands_when_the_data_dir_is_unusable(home, tmp_path):
    from tutor.packs.catalog import Catalog

    ref = next(iter(Catalog.load([]).exercises()))
    answer = write(tmp_path, ref.exercise.solution)
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the data dir should be\n")
    r = cli("check", ref.key, "--file", str(answer), home=blocked)
    assert r.returncode == 0 and ref.key in r.stdout, r.stderr
    assert r.stderr.count("\n") == 1 and "this attempt was not saved" in r.stderr


def test_check_usage_errors(pack, home, tmp_path):
    r = cli("--pack", str(pack), "check", "first-steps/nope", "--file", str(write(tmp_path, GOOD)), home=home)
    assert r.returncode == 2 and "has no exercise 'nope'" in r.stderr
    r = cli("--pack", str(pack), "check", "first-steps/zeros", "--file", str(tmp_path / "missing.py"), home=home)
    assert r.returncode == 2 and "no such file" in r.stderr
    r = cli("check", "noslash", "--file", str(write(tmp_path, GOOD)), home=home)
    assert r.returncode == 2 and "LESSON/EXERCISE" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.slow
def test_pack_test_green_then_red_when_a_solution_breaks(tmp_path, home):
    pack = new_pack(tmp_path / "p")
    r = cli("pack", "test", "--trust", str(pack), home=home)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 failed" in r.stdout
    # the solution no longer does what the checks ask: pack test must catch it
    (pack / "first-steps" / "solution_zeros.py").write_text(FLOAT32)
    r = cli("pack", "test", "--trust", str(pack), home=home)
    assert r.returncode == 1
    assert "FAIL first-steps/zeros" in r.stdout and "solution" in r.stdout


@pytest.mark.slow
def test_pack_test_catches_a_wrong_solution_that_passes_and_a_stale_key(tmp_path, home):
    pack = new_pack(tmp_path / "p")
    lesson = pack / "first-steps" / "lesson.yaml"
    text = lesson.read_text()
    text = text.replace(
        "t = torch.zeros(2, 3, device=DEVICE)", "t = torch.zeros(2, 3, dtype=torch.float64, device=DEVICE)"
    )
    text += (
        "  - id: stride-key\n    type: predict\n    prompt: What prints?\n"
        "    code: |\n      import torch\n      torch.arange(6).reshape(2, 3).t().stride()\n"
        '    expected: "(3, 1)"\n'
    )
    lesson.write_text(text)
    r = cli("pack", "test", "--trust", str(pack), "--json", home=home)
    assert r.returncode == 1
    rows = {(row["item"], row["case"]): row for row in json.loads(r.stdout)["rows"]}
    assert rows[("first-steps/zeros", "wrong 1")]["ok"] is False
    assert "must fail" in rows[("first-steps/zeros", "wrong 1")]["detail"]
    stale = rows[("first-steps/stride-key", "predict")]
    assert stale["ok"] is False and "(1, 3)" in stale["detail"]
    assert rows[("first-steps/zeros", "solution")]["ok"] is True


@pytest.mark.slow
def test_pack_test_in_parallel_keeps_the_pack_order(tmp_path, home):
    pack = new_pack(tmp_path / "p")
    lesson = pack / "first-steps" / "lesson.yaml"
    lesson.write_text(
        lesson.read_text() + "  - id: stride-key\n    type: predict\n    prompt: What prints?\n"
        "    code: |\n      import torch\n      torch.arange(6).reshape(2, 3).t().stride()\n"
        '    expected: "(1, 3)"\n'
    )
    one = cli("pack", "test", str(pack), "--json", "--jobs", "1", "--trust", home=home)
    three = cli("pack", "test", str(pack), "--json", "--jobs", "3", "--trust", home=home)
    assert one.returncode == 0 and three.returncode == 0, one.stderr + three.stderr
    order = [(row["item"], row["case"], row["ok"]) for row in json.loads(one.stdout)["rows"]]
    assert [(row["item"], row["case"], row["ok"]) for row in json.loads(three.stdout)["rows"]] == order
    assert len({item for item, _, _ in order}) > 1  # more than one item, so workers really share them
    r = cli("pack", "test", str(pack), "--jobs", "0", "--trust", home=home)
    assert r.returncode == 2 and "--jobs needs a whole number of at least 1" in r.stderr
    assert "Traceback" not in r.stderr
