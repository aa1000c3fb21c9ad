"""Layering (docs/architecture.md, "Layers"): headless modules never import textual; the UI side never imports torch."""

from __future__ import annotations

import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
HEADLESS = ["tutor.packs", "tutor.engine", "tutor.grading", "tutor.progress", "tutor.commands"]
# tutor.checks is not listed: it runs inside kernels, where torch belongs.


def modules_under(package: str) -> list[str]:
    mod = __import__(package, fromlist=["_"])
    names = [package]
    for info in pkgutil.walk_packages(mod.__path__, prefix=package + "."):
        names.append(info.name)
    return names


def imported_after(code: str, env: dict | None = None) -> set[str]:
    probe = code + "\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"
    r = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, **(env or {})},
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    return set(json.loads(r.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("package", HEADLESS)
def test_headless_modules_import_no_textual_and_no_torch(package):
    names = [n for n in modules_under(package) if n != "tutor.commands.tui"]
    loaded = imported_after("\n".join(f"import {n}" for n in names))
    assert not any(m == "textual" or m.startswith("textual.") for m in loaded), package
    assert "torch" not in loaded, f"{package} imports torch: only kernels may"


def test_checks_library_depends_on_stdlib_torch_numpy_only():
    loaded = imported_after("import tutor.checks")
    third_party = (
        {m.split(".")[0] for m in loaded}
        - set(sys.stdlib_module_names)
        - {"tutor", "torch", "numpy", "_distutils_hack"}
    )
    # torch drags in its own dependencies; what matters is that tutor.checks imports no other tutor module
    assert not [m for m in loaded if m.startswith("tutor.") and not m.startswith("tutor.checks")]
    assert "pydantic" not in loaded and "textual" not in loaded, third_party


def test_cli_list_imports_no_torch(tmp_path):
    loaded = imported_after(
        "from tutor.cli import main\nimport contextlib, io\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n    main(['list'])",
        env={"PTFUND_TUTOR_HOME": str(tmp_path)},
    )
    assert "torch" not in loaded
    assert "textual" not in loaded


def test_the_warm_server_starts_its_fork_server_before_its_heavy_imports():
    """A cold check waits for the fork server's `import torch`: the warm server's entry and
    the fork client load no asyncio or jupyter_client before starting it (serving.py
    loads them after), so those imports overlap torch's."""
    loaded = imported_after("import tutor.grading.warm.server, tutor.engine.forkclient")
    assert not {"asyncio", "jupyter_client", "zmq", "torch"} & loaded
    assert "tutor.grading.warm.serving" not in loaded
    # Nor does `check` before it asks (or starts) the server: asyncio is for checking in-process.
    loaded = imported_after("from tutor.cli import main\nimport tutor.commands.check, tutor.grading.warm.client")
    assert not {"asyncio", "jupyter_client", "zmq", "torch"} & loaded


def test_no_import_cycles():
    """Two modules that import each other (at run time) cannot be understood or split apart alone."""
    grimp = pytest.importorskip("grimp")  # installed with import-linter by the dev extra
    graph = grimp.build_graph("tutor", exclude_type_checking_imports=True)
    cycles = sorted(
        {
            tuple(sorted((a, b)))
            for a in graph.modules
            for b in graph.find_modules_directly_imported_by(a)
            if graph.chain_exists(importer=b, imported=a)
        }
    )
    assert not cycles, cycles
