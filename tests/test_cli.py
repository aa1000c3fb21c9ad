"""The command line itself: help, argument errors, --data-dir, show, docs and completion."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tutor import cli
from tutor.packs.catalog import Catalog
from tutor.paths import ENV_CACHE, ENV_HOME

REPO = Path(__file__).resolve().parent.parent


def run_main(argv: list[str], capsys) -> tuple[int, str, str]:
    try:
        rc = cli.main(argv)
    except SystemExit as exc:  # argparse answers by exiting
        rc = int(exc.code or 0)
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    h = tmp_path / "home"
    monkeypatch.setenv(ENV_HOME, str(h))
    return h


def test_check_help_example_is_a_real_exercise(capsys):
    rc, out, _ = run_main(["check", "--help"], capsys)
    assert rc == 0 and cli.EXAMPLE_EXERCISE in out
    Catalog.load([]).find_exercise(cli.EXAMPLE_EXERCISE)  # raises if the example does not exist


@pytest.mark.parametrize("argv", [["check", "--help"], ["pack", "test", "--help"], ["progress", "export", "--help"]])
def test_subcommand_help_names_global_options_once_in_a_note(argv, capsys):
    rc, out, _ = run_main(argv, capsys)
    assert rc == 0
    assert "--gateway URL" not in out and "CONNECTION_FILE" not in out and "$PTFUND_TUTOR_HOME" not in out
    assert cli.GLOBAL_OPTIONS_NOTE.split(" (")[0] in " ".join(out.split())


def test_global_options_still_work_after_the_subcommand(home, tmp_path, capsys):
    other = tmp_path / "other"
    rc, _, err = run_main(["progress", "--json", "--data-dir", str(other)], capsys)
    assert rc == 0, err
    assert (other / "progress.sqlite3").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["grade"], "grade needs SUBMISSIONS (a folder of learner folders) or --gradescope DIR"),
        (["grade", "subs", "--gradescope", "gs"], "grade takes SUBMISSIONS or --gradescope DIR, not both"),
        (["grade", "subs", "--kernel", "k.json"], "cannot use one --kernel"),
        (["grade", "--jobs", "0", "subs"], "--jobs needs a whole number of at least 1, not '0'"),
        (["pack", "test", "--jobs", "x", "dir"], "--jobs needs a whole number of at least 1, not 'x'"),
        (["quiz", "--limit", "-1"], "--limit needs a whole number of at least 1"),
        (["check", "a/b", "--file", "f.py", "--timeout", "-3"], "--timeout needs a number of seconds above 0"),
        (["check", "nonsense", "--file", "f.py"], "'nonsense' is not an exercise id: write LESSON/EXERCISE"),
        (["--pack", "/no/such/pack", "list"], "--pack /no/such/pack: no such folder"),
        (["--kernel", "k.json", "--gateway", "http://x", "list"], "--kernel and --gateway both say where"),
    ],
)
def test_argument_errors_are_one_sentence_and_exit_2(argv, message, home, capsys):
    rc, out, err = run_main(argv, capsys)
    assert rc == 2 and out == ""
    assert message in err and "not both" not in err.replace(message, "")
    assert "Traceback" not in err


@pytest.mark.slow  # a process of its own, so sys.modules shows what the error cost
def test_argument_errors_answer_before_anything_heavy_is_imported(tmp_path):
    probe = (
        "import sys, json\nfrom tutor.cli import main\n"
        "for argv in (['grade'], ['--pack', '/nope', 'list'], ['check', 'a/b', '--file', 'f', '--timeout', '0']):\n"
        "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    r = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, ENV_HOME: str(tmp_path)},
        timeout=120,
    )
    loaded = set(json.loads(r.stdout.strip().splitlines()[-1]))
    heavy = {"asyncio", "pydantic", "yaml", "jupyter_client", "sqlite3", "tutor.packs", "tutor.commands", "torch"}
    assert not heavy & loaded, heavy & loaded


def test_data_dir_moves_the_caches_with_progress(tmp_path, monkeypatch, capsys):
    from tutor.grading import gradecache, packtimes

    monkeypatch.delenv(ENV_HOME, raising=False)
    monkeypatch.delenv(ENV_CACHE, raising=False)
    data = tmp_path / "data"
    # `show` loads the lessons (`list` reads only their outline, and writes no cache).
    rc, _, err = run_main(["--data-dir", str(data), "show", "tensors"], capsys)
    assert rc == 0, err
    assert gradecache.default_path().is_relative_to(data)
    assert packtimes.default_path().is_relative_to(data)
    assert any((data / "cache").rglob("*.pickle"))  # the lesson cache `show` just wrote


def test_export_into_a_missing_folder_is_refused(home, tmp_path, capsys):
    target = tmp_path / "no" / "such" / "export.json"
    rc, _, err = run_main(["progress", "export", str(target)], capsys)
    assert rc == 2
    assert err.strip() == f"ptfund-tutor: cannot write {target}: the folder {target.parent} does not exist"
    assert not (tmp_path / "no").exists()


def test_show_an_exercise_as_plain_text(home, capsys):
    rc, out, err = run_main(["show", "tensors/features-and-labels"], capsys)
    assert rc == 0, err
    assert out.startswith("tensors/features-and-labels: Features and labels with the right dtypes\n")
    assert "- features: a tensor of rows with dtype float32 on DEVICE" in out
    assert "    rows = [[0, 3, 7]" in out  # the visible setup, as an indented block
    assert "`" not in out and "**" not in out


def test_show_a_lesson_prints_its_intuition_and_exercises(home, capsys):
    rc, out, err = run_main(["show", "tensors"], capsys)
    assert rc == 0, err
    assert out.startswith("Tensors: array + device + autograd\n")
    assert "Shape, dtype and device are the contract" in out
    assert "- tensors/leaf-parameter: A small weight that is a leaf" in out
    assert "`" not in out and not [line for line in out.splitlines() if line.startswith("#")]


@pytest.mark.parametrize("target", ["nope", "tensors/nope"])
def test_show_unknown_is_one_sentence(target, home, capsys):
    rc, out, err = run_main(["show", target], capsys)
    assert rc == 2 and out == "" and err.count("\n") == 1 and "see `ptfund-tutor list`" in err


def test_docs_lists_topics_and_prints_one(capsys):
    rc, out, _ = run_main(["docs"], capsys)
    assert rc == 0 and "grading" in out and "Grading a class" in out
    rc, out, _ = run_main(["docs", "grading"], capsys)
    assert rc == 0 and out == (REPO / "docs" / "grading.md").read_text(encoding="utf-8")
    rc, out, err = run_main(["docs", "nope"], capsys)
    assert rc == 2 and out == "" and "no documentation topic 'nope'" in err


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_prints_a_script_for_each_shell(shell, capsys):
    rc, out, _ = run_main(["completion", shell], capsys)
    assert rc == 0 and "ptfund-tutor" in out and "_ARGCOMPLETE" in out


def test_completion_bash_script_is_valid_bash(capsys):
    _, out, _ = run_main(["completion", "bash"], capsys)
    r = subprocess.run(["bash", "-n"], input=out, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


@pytest.mark.slow  # the shell's side of the protocol: the program answers in a process of its own
@pytest.mark.parametrize(
    ("line", "expected"),
    [("ptfund-tutor sh", {"show"}), ("ptfund-tutor completion ", {"bash", "zsh", "fish"})],
)
def test_completion_answers_the_shell(line, expected, tmp_path):
    answer = tmp_path / "answer"
    env = {
        **os.environ,
        "_ARGCOMPLETE": "1",
        "COMP_LINE": line,
        "COMP_POINT": str(len(line)),
        "_ARGCOMPLETE_STDOUT_FILENAME": str(answer),
        ENV_HOME: str(tmp_path),
    }
    r = subprocess.run([sys.executable, "-m", "tutor"], capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert r.returncode == 0, r.stderr
    words = {w.strip() for w in answer.read_text().replace("\v", " ").split()}
    assert expected <= words
