"""Lessons whose ``torch`` range leaves out the installed torch: ``pack test`` passes over
them and says why (docs/pack-format.md, LESSON/lesson.yaml). The version is read without
importing torch, as the mutant cache reads it."""

from __future__ import annotations

from importlib import metadata

from tutor.packs import models as m


def installed_torch() -> str | None:
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


def outside_range(lesson: m.Lesson, version: str | None = None) -> str | None:
    """Why ``lesson`` cannot run on torch ``version`` (default: the installed one); None if it can."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    version = version or installed_torch()
    if not lesson.torch or version is None:
        return None  # no range, or no torch beside the tutor to compare (the kernels will say)
    try:
        release = Version(version).base_version  # 2.13.0+cpu is 2.13.0
    except InvalidVersion:
        return None
    if SpecifierSet(lesson.torch).contains(release, prereleases=True):
        return None
    return f"needs torch {lesson.torch}; this is torch {version}"
