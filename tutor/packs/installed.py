"""Packs installed with pip: the ``ptfund_tutor.packs`` entry point group.

An entry point ``demo = "demo_pack:lessons"`` names the folder ``lessons`` inside the
installed package ``demo_pack``. Entry points come from importlib.metadata; the package is
located with ``importlib.util.find_spec``, never imported (``importlib.resources.files``
would import it): loading a pack never executes its code, its ``__init__`` included, and
``list`` stays as fast as reading a few metadata files.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from tutor.packs.problems import Problem

GROUP = "ptfund_tutor.packs"


@dataclass(frozen=True)
class PackDistribution:
    """Where an installed pack came from: trust is granted per distribution and version."""

    name: str  # the distribution, as pip names it
    version: str
    entry_point: str  # the entry point's name

    def __str__(self) -> str:
        return f"{self.name} {self.version}"


def installed_packs() -> tuple[list[tuple[Path, PackDistribution]], list[Problem]]:
    """The pack folders of every installed distribution that declares one, and one problem
    for each entry point that names no folder (a broken install never hides the others)."""
    found: list[tuple[Path, PackDistribution]] = []
    problems: list[Problem] = []
    seen: set[tuple[str, str]] = set()
    for ep in metadata.entry_points(group=GROUP):
        dist = ep.dist
        name = dist.metadata["Name"] if dist is not None else "?"
        version = dist.version if dist is not None else "?"
        if (name, ep.name) in seen:  # the same distribution seen twice on sys.path: the first wins
            continue
        seen.add((name, ep.name))
        where = f"entry point {ep.name!r} of {name} {version}"
        folder = _pack_folder(ep.value)
        if isinstance(folder, str):
            problems.append(Problem(where, 1, 1, GROUP, folder))
            continue
        found.append((folder, PackDistribution(name, version, ep.name)))
    return found, problems


def _pack_folder(value: str) -> Path | str:
    """The folder ``PACKAGE:FOLDER`` names, or a sentence saying why there is none."""
    package, sep, folder = value.partition(":")
    package, folder = package.strip(), folder.strip()
    if not sep or not package or not folder:
        return f"{value!r} is not PACKAGE:FOLDER (e.g. demo_pack:lessons)"
    if "." in package:
        # find_spec of a dotted name imports the parent packages; a pack lives in a top-level one.
        return f"{package!r} is not a top-level package: name the package that holds the pack folder"
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError) as exc:
        return f"cannot find the package {package!r}: {exc}"
    if spec is None or not spec.submodule_search_locations:
        return f"no installed package {package!r}"
    for location in spec.submodule_search_locations:
        candidate = Path(location) / folder
        if (candidate / "pack.yaml").is_file():
            return candidate
    return f"the package {package!r} has no pack folder {folder!r} (no {folder}/pack.yaml in it)"
