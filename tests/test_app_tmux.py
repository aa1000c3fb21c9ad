"""The real app in a real terminal (tmux): tests/tmux_e2e.sh, so CI runs it too."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent / "tmux_e2e.sh"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_finish_the_tensors_lesson_in_tmux_then_reopen():
    env = dict(os.environ, PYTHON=sys.executable)
    # ptfund-tutor must be the one of this interpreter's environment
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    proc = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=900, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASS" in proc.stdout


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_recall_quiz_in_tmux(size):
    """tests/tmux_recall.sh: new cards only from the lesson added, options shuffled and kept on
    reopening, `3, 1` accepted with the key's form shown, cloze blanks on screen."""
    env = dict(os.environ, PYTHON=sys.executable)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    script = SCRIPT.with_name("tmux_recall.sh")
    proc = subprocess.run(["bash", str(script), *map(str, size)], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASS" in proc.stdout


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_first_hour_in_tmux(size):
    """tests/tmux_first_hour.sh: palette by name, wrapped advice, ctrl+c stops a loop, a
    figure in half blocks, a check with its clock stopped by f6, one Esc to home."""
    env = dict(os.environ, PYTHON=sys.executable)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    script = SCRIPT.with_name("tmux_first_hour.sh")
    proc = subprocess.run(["bash", str(script), *map(str, size)], capture_output=True, text=True, timeout=900, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASS" in proc.stdout
