"""Execution: Jupyter kernel sessions, device detection, streamed output, crash recovery.

Importing this package is cheap (the app and grading read ``tutor.engine.events``): the
jupyter_client machinery loads only when a session or a pool is first used.
Nothing here imports torch; only kernels do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tutor.engine.events import DeviceInfo, RunResult

if TYPE_CHECKING:  # pragma: no cover
    from tutor.engine.pool import KernelPool
    from tutor.engine.session import KernelSession

__all__ = ["DeviceInfo", "KernelPool", "KernelSession", "RunResult"]


def __getattr__(name: str) -> type:
    if name == "KernelSession":
        from tutor.engine.session import KernelSession

        return KernelSession
    if name == "KernelPool":
        from tutor.engine.pool import KernelPool

        return KernelPool
    raise AttributeError(f"module 'tutor.engine' has no attribute {name!r}")
