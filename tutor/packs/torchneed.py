"""A lesson's ``torch:`` field: the torch releases it needs, and whether this machine has one.

The host never imports torch, so the installed release is read from the package's metadata
(the kernels this machine starts import that torch)."""

from __future__ import annotations

from importlib import metadata
from typing import TYPE_CHECKING

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

if TYPE_CHECKING:
    from tutor.packs.models import Lesson


def parse(text: str) -> SpecifierSet:
    """The specifier, or ValueError with one sentence."""
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        raise ValueError(f"{text!r} is not a version specifier such as '>=2.4' or '>=2.3,<3'") from None


def installed() -> str | None:
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


def unmet(need: str, have: str | None = None) -> str | None:
    """Why a lesson that needs ``need`` cannot run here, or None when it can (or when no
    torch is installed to compare with: then the kernel's own error says more)."""
    if not need:
        return None
    have = have if have is not None else installed()
    if have is None:
        return None
    try:
        version = Version(have)
    except InvalidVersion:
        return None
    if parse(need).contains(version, prereleases=True):
        return None
    return f"needs torch {need}; this machine has torch {have}"


def require(lesson: Lesson) -> None:
    """Refuse, in one sentence, to check an exercise of a lesson this torch cannot run."""
    from tutor.errors import TutorError

    why = unmet(lesson.torch)
    if why is not None:
        raise TutorError(f"lesson {lesson.id!r} {why}")
