"""``watch``: the exercise folder (starters written once, never overwritten, reset keeps the
old text) and, in tests/tmux_watch.sh, three saves as three editors write them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tutor.commands.watch import on_network_fs
from tutor.packs.catalog import Catalog
from tutor.packs.workfolder import exercise_file, reset, starter_text, write_starters

SCRIPT = Path(__file__).resolve().parent / "tmux_watch.sh"


@pytest.fixture(scope="module")
def refs():
    return list(Catalog.load().exercises(lesson="tensors"))


def test_starters_carry_the_prompt_and_are_written_once(tmp_path, refs):
    assert write_starters(tmp_path, refs) == len(refs)
    first = exercise_file(tmp_path, refs[0])
    assert first == tmp_path / "tensors" / f"{refs[0].exercise.id}.py"
    text = first.read_text(encoding="utf-8")
    assert text.startswith(f"# {refs[0].key}: {refs[0].exercise.title}\n")
    assert all(line.startswith("#") for line in text.split("\n\n", 1)[0].splitlines())
    assert refs[0].exercise.starter.strip() in text
    compile(text, str(first), "exec")  # the prompt is comments: the file is Python as written
    first.write_text("mine = 1\n", encoding="utf-8")
    assert write_starters(tmp_path, refs) == 0
    assert first.read_text(encoding="utf-8") == "mine = 1\n"


def test_reset_keeps_the_learners_text_beside_the_starter(tmp_path, refs):
    write_starters(tmp_path, refs[:1])
    path = exercise_file(tmp_path, refs[0])
    path.write_text("mine = 1\n", encoding="utf-8")
    backup = reset(tmp_path, refs[0])
    assert backup is not None and backup.read_text(encoding="utf-8") == "mine = 1\n"
    assert path.read_text(encoding="utf-8") == starter_text(refs[0])


def test_a_local_folder_is_not_a_network_file_system(tmp_path):
    assert on_network_fs(tmp_path) is False


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_watch_in_tmux_three_saves_as_editors_write_them():
    env = dict(os.environ, PYTHON=sys.executable)
    env.pop("PTFUND_TUTOR_NO_WARM", None)  # verdicts from the warm server; the script stops it
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    proc = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASS" in proc.stdout
