"""Engine failures a user can cause or fix; the CLI prints them as one line."""

from __future__ import annotations

from tutor.errors import TutorError


class EngineError(TutorError):
    """The kernel could not be started, attached to or brought back."""

    exit_code = 2


class DeviceUnavailable(EngineError):
    """``--device`` asked for a device the kernel's torch cannot use."""


class KernelDied(EngineError):
    """The kernel is gone and could not be brought back."""
