"""The files of a pack folder, with symbolic links taken as what they point to.

A link that stays inside the pack is followed: its files count as the pack's (the trust
hash covers what the link points to, so changing the target asks for trust again). A
link that leads out of the pack is never followed; the loader reports it as a problem.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

# Tool folders that are never part of a lesson.
SKIP_DIRS = frozenset({"__pycache__", ".git", ".hg", ".svn", ".mypy_cache", ".pytest_cache"})


@dataclass
class PackFiles:
    files: list[tuple[str, Path]] = field(default_factory=list)  # (name in the pack, real path)
    links_out: list[tuple[str, str]] = field(default_factory=list)  # (name in the pack, where it points)


def inside(real_root: Path, real: Path) -> bool:
    return real == real_root or real.is_relative_to(real_root)


def walk(root: Path) -> PackFiles:
    """Every file under ``root`` in a stable order; links inside followed once, links out listed."""
    real_root = Path(root).resolve()
    found = PackFiles()
    visited: set[Path] = set()

    def visit(folder: Path, prefix: str) -> None:
        if folder in visited:  # a link back to a folder already walked (or a loop)
            return
        visited.add(folder)
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if entry.name in SKIP_DIRS:
                continue
            name = prefix + entry.name
            path = Path(entry.path)
            if entry.is_symlink():
                try:
                    target = path.resolve()
                except (OSError, RuntimeError):  # a loop of links
                    found.links_out.append((name, os.readlink(path)))
                    continue
                if not inside(real_root, target):
                    found.links_out.append((name, os.readlink(path)))
                elif target.is_dir():
                    visit(target, name + "/")
                elif target.is_file():
                    found.files.append((name, target))
            elif entry.is_dir(follow_symlinks=False):
                visit(path, name + "/")
            elif entry.is_file(follow_symlinks=False):
                found.files.append((name, path))

    visit(real_root, "")
    return found
