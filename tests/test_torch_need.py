"""A lesson's `torch:` field names the torch releases it needs: `pack test` skips it elsewhere
with the reason, `check` refuses it in one sentence, and a bad specifier is a pack error at
FILE:LINE:COL."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tutor.packs.scaffold import new_pack
from tutor.packs.torchneed import installed, unmet


def cli(*args: str, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PTFUND_TUTOR_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "tutor", *args], capture_output=True, text=True, env=env, timeout=600)


def pack_needing(tmp_path: Path, need: str) -> Path:
    pack = new_pack(tmp_path / "demo")
    f = next(pack.glob("*/lesson.yaml"))
    text = f.read_text()
    f.write_text(text.replace("intuition: intuition.md\n", f"intuition: intuition.md\ntorch: '{need}'\n", 1))
    return pack


def test_a_release_inside_or_outside_the_specifier():
    assert unmet("", "2.2.2") is None
    assert unmet(">=2.2", "2.2.2+cu121") is None  # local labels (+cpu, +cu121) do not count
    assert unmet(">=2.3", "2.2.2+cu121") == "needs torch >=2.3; this machine has torch 2.2.2+cu121"
    assert unmet(">=2.3,<3", "3.0.0") is not None
    assert installed() is not None and unmet(">=2.2") is None


def test_a_bad_specifier_is_a_pack_error_at_its_place(tmp_path):
    pack = pack_needing(tmp_path, "2.3 or newer")
    r = cli("pack", "validate", str(pack), "--no-cache", home=tmp_path / "home")
    assert r.returncode == 1 and "Traceback" not in r.stdout + r.stderr
    f = next(pack.glob("*/lesson.yaml"))
    line = next(i for i, t in enumerate(f.read_text().splitlines(), 1) if t.startswith("torch:"))
    assert f"lesson.yaml:{line}:8: torch: '2.3 or newer' is not a version specifier" in r.stdout, r.stdout


@pytest.mark.slow
def test_pack_test_skips_a_lesson_for_a_newer_torch_and_check_refuses_it(tmp_path):
    pack = pack_needing(tmp_path, ">=99")
    r = cli("pack", "test", str(pack), "--trust", "--mutants", "off", home=tmp_path / "home")
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert out.startswith("skip first-steps"), out
    assert f"needs torch >=99; this machine has torch {installed()}" in out, out
    assert "0 passed, 0 failed" in out and "1 lesson skipped for this torch" in out, out
    solution = tmp_path / "mine.py"
    solution.write_text("import torch\nt = torch.zeros(2, 3, dtype=torch.float64, device=DEVICE)\n")
    r = cli("--pack", str(pack), "check", "first-steps/zeros", "--file", str(solution), "--trust", home=tmp_path / "h2")
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"lesson 'first-steps' needs torch >=99; this machine has torch {installed()}" in r.stderr, r.stderr
    assert "Traceback" not in r.stdout + r.stderr
    met = pack_needing(tmp_path / "met", ">=2.2")
    r = cli("pack", "test", str(met), "--trust", "--mutants", "off", home=tmp_path / "home")
    assert r.returncode == 0 and "skipped" not in r.stdout, r.stdout
