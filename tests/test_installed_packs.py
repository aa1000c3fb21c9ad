"""Packs installed with pip (entry point group ``ptfund_tutor.packs``) and translations.

A pack made with ``pack new --package`` is really pip-installed (offline, into a target
folder) and found by ``list``, ``check`` and the app; trust follows the distribution's
version; a translation replaces its pack when the learner's language setting asks for it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tutor.cli import main

PIP_OFFLINE = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-build-isolation", "--upgrade"]
SOLUTION = "import torch\nt = torch.zeros(2, 3, dtype=torch.float64, device=DEVICE)\n"


def cli(args: list[str], home: Path, site: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PTFUND_TUTOR_HOME": str(home)}
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])])
    return subprocess.run(
        [sys.executable, "-m", "tutor", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def pip_install(project: Path, site: Path) -> None:
    """Offline, without build isolation: hatchling comes from the test extra."""
    done = subprocess.run(
        [*PIP_OFFLINE, "--target", str(site), str(project)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr


def set_version(project: Path, version: str) -> None:
    manifest = project / "demo_pack" / "lessons" / "pack.yaml"
    manifest.write_text(re.sub(r'version: "[^"]+"', f'version: "{version}"', manifest.read_text()))


@pytest.fixture
def installed(tmp_path: Path) -> tuple[Path, Path]:
    """(the project `pack new --package` wrote, the folder pip installed it into)."""
    project, site = tmp_path / "demo", tmp_path / "site"
    assert main(["pack", "new", str(project), "--package"]) == 0
    assert (project / "pyproject.toml").is_file()
    pip_install(project, site)
    return project, site


def test_pack_new_package_writes_a_project_whose_pack_validates(tmp_path: Path, capsys):
    project = tmp_path / "demo"
    assert main(["pack", "new", str(project), "--package"]) == 0
    text = (project / "pyproject.toml").read_text()
    assert '[project.entry-points."ptfund_tutor.packs"]' in text
    assert 'demo = "demo_pack:lessons"' in text
    assert main(["pack", "validate", str(project / "demo_pack" / "lessons")]) == 0
    assert "no problems" in capsys.readouterr().out


@pytest.mark.slow
def test_an_installed_pack_is_listed_checked_and_trusted_per_version(installed, tmp_path: Path):
    project, site = installed
    home = tmp_path / "home"
    listed = cli(["list", "--json"], home, site)
    assert listed.returncode == 0, listed.stderr
    pack = next(p for p in json.loads(listed.stdout)["packs"] if p["id"] == "demo")
    assert pack["distribution"] == {"name": "demo-pack", "version": "0.1.0"}
    assert Path(pack["root"]).resolve() == (site / "demo_pack" / "lessons").resolve()
    plain = cli(["list"], home, site)
    assert "[demo 0.1.0, installed: demo-pack 0.1.0]" in plain.stdout

    solution = tmp_path / "solution.py"
    solution.write_text(SOLUTION)
    refused = cli(["check", "first-steps/zeros", "--file", str(solution)], home, site)
    assert refused.returncode == 2
    assert "installed: demo-pack 0.1.0" in refused.stderr and "--trust" in refused.stderr
    passed = cli(["check", "first-steps/zeros", "--file", str(solution), "--trust"], home, site)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "passes" in passed.stdout

    # An upgrade asks again: trust was for demo-pack 0.1.0.
    set_version(project, "0.2.0")
    pip_install(project, site)
    again = cli(["check", "first-steps/zeros", "--file", str(solution)], home, site)
    assert again.returncode == 2 and "demo-pack 0.2.0" in again.stderr, again.stderr


@pytest.mark.slow
async def test_the_app_offers_an_installed_pack(installed, tmp_path: Path, monkeypatch):
    from test_app_support import wait_for, wait_ready

    from tutor.app.app import TutorApp, TutorOptions

    _, site = installed
    monkeypatch.syspath_prepend(str(site))
    app = TutorApp(TutorOptions(data_dir=str(tmp_path / "home"), builtin=False, installed=True, start_kernels=False))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        assert app.catalog is not None and [p.id for p in app.catalog.packs] == ["demo"]
        assert app.catalog.packs[0].distribution is not None
        lessons = app.screen.query_one("#lessons")
        await wait_for(pilot, lambda: lessons.option_count >= 1, 10, "the installed pack's lesson")
        assert any(
            "First steps with tensors" in str(lessons.get_option_at_index(i).prompt)
            for i in range(lessons.option_count)
        )


def test_an_entry_point_that_names_no_pack_is_one_problem(tmp_path: Path, monkeypatch):
    """A broken install is reported in one line and hides nothing else."""
    site = tmp_path / "site"
    dist = site / "broken_pack-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-pack\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[ptfund_tutor.packs]\nbroken = broken_pack:lessons\nbad = no-colon\n")
    (site / "broken_pack").mkdir()
    (site / "broken_pack" / "__init__.py").write_text("raise SystemExit('imported!')\n")  # never imported
    monkeypatch.syspath_prepend(str(site))
    from tutor.packs.catalog import Catalog

    catalog = Catalog.load([], builtin=False, installed=True)
    assert catalog.packs == []
    messages = sorted(str(p) for p in catalog.problems)
    assert len(messages) == 2
    assert "has no pack folder 'lessons'" in messages[1] and "broken-pack 1.0" in messages[1]
    assert "is not PACKAGE:FOLDER" in messages[0]


def _translate(original: Path, target: Path, language: str) -> Path:
    """A copy of the pack with other texts, declaring that it translates the original."""
    import shutil

    shutil.copytree(original, target)
    manifest = target / "pack.yaml"
    text = manifest.read_text()
    text = re.sub(r"^id: .*$", "id: demo-de", text, flags=re.M)
    text = text.replace("title: My first pack", "title: Mein erstes Paket")
    manifest.write_text(text + f"language: {language}\ntranslates: demo\n")
    lesson = target / "first-steps" / "lesson.yaml"
    lesson.write_text(
        lesson.read_text().replace("title: First steps with tensors", "title: Erste Schritte mit Tensoren")
    )
    return target


def test_a_translation_replaces_its_pack_when_the_language_setting_asks(tmp_path: Path, capsys):
    original = tmp_path / "demo"
    assert main(["pack", "new", str(original)]) == 0
    german = _translate(original, tmp_path / "demo-de", "de")
    home = tmp_path / "home"
    from tutor.packs.catalog import Catalog

    plain = Catalog.load([str(original), str(german)], builtin=False)
    assert [p.id for p in plain.packs] == ["demo"] and plain.packs[0].title == "My first pack"
    assert plain.languages("demo") == ["en", "de"]
    translated = Catalog.load([str(original), str(german)], builtin=False, language="de")
    assert [p.id for p in translated.packs] == ["demo"]  # the same id: progress carries across languages
    assert translated.packs[0].title == "Mein erstes Paket"
    assert translated.packs[0].lessons[0].title == "Erste Schritte mit Tensoren"

    capsys.readouterr()
    args = ["--data-dir", str(home), "--pack", str(original), "--pack", str(german)]
    assert main([*args, "progress", "set", "language", "de"]) == 0
    assert main([*args, "list"]) == 0
    out = capsys.readouterr().out
    assert "Mein erstes Paket [demo 0.1.0" in out and "languages: en, de" in out
    assert main([*args, "progress", "set", "language", "not a tag"]) == 2
    assert "language tag" in capsys.readouterr().err


def test_a_translation_with_other_ids_is_a_problem(tmp_path: Path):
    original = tmp_path / "demo"
    assert main(["pack", "new", str(original)]) == 0
    german = _translate(original, tmp_path / "demo-de", "de")
    lesson = german / "first-steps" / "lesson.yaml"
    lesson.write_text(lesson.read_text().replace("id: zeros", "id: nullen"))
    from tutor.packs.catalog import Catalog

    catalog = Catalog.load([str(original), str(german)], builtin=False, language="de")
    assert [p.title for p in catalog.packs] == ["My first pack"]
    assert any("same exercises" in str(p) for p in catalog.problems), catalog.problems
