"""The wheel carries the built-in pack: installed (not editable), `list` works from anywhere."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def test_wheel_ships_the_built_in_pack_and_list_works_from_it(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "dist"), str(REPO)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    [wheel] = (tmp_path / "dist").glob("ptfund_tutor-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    lessons = [
        p.relative_to(REPO / "lessons").as_posix()
        for p in (REPO / "lessons").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    ]
    missing = [name for name in lessons if f"tutor/_lessons/{name}" not in names]
    assert not missing, missing
    docs = [p.name for p in (REPO / "docs").glob("*.md")]
    assert docs and not [name for name in docs if f"tutor/_docs/{name}" not in names]
    # Unpacked as an installer would, run from an unrelated folder with the checkout out of reach.
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site), "PTFUND_TUTOR_HOME": str(tmp_path / "home")}
    r = subprocess.run(
        [sys.executable, "-P", "-m", "tutor", "list"],
        capture_output=True,
        text=True,
        cwd=elsewhere,
        env=env,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert "built-in" in r.stdout and "tensors/features-and-labels" in r.stdout
    r = subprocess.run(
        [sys.executable, "-P", "-m", "tutor", "docs", "grading"],
        capture_output=True,
        text=True,
        cwd=elsewhere,
        env=env,
        timeout=120,
    )
    assert r.returncode == 0 and r.stdout == (REPO / "docs" / "grading.md").read_text(encoding="utf-8"), r.stderr
    r = subprocess.run(
        [sys.executable, "-P", "-c", "import tutor.paths as p; print(p.builtin_pack_dir())"],
        capture_output=True,
        text=True,
        cwd=elsewhere,
        env=env,
    )
    assert r.stdout.strip() == str(site / "tutor" / "_lessons")


@pytest.mark.slow  # builds the sdist in a process of its own
def test_sdist_ships_the_docs(tmp_path):
    pytest.importorskip("build")  # the dev extra installs it
    r = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "-o", str(tmp_path), str(REPO)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    [sdist] = tmp_path.glob("ptfund_tutor-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
    docs = [f"docs/{p.name}" for p in (REPO / "docs").glob("*.md")]
    assert docs and not [name for name in docs if name not in names]
