"""Execution: Jupyter kernel sessions, device detection, streamed output, crash recovery.

Importing this package costs nothing: each name below loads its module when first used
(the fork server, the warm server and ``check`` import small parts of the package on a
cold start, where every module counts), and the jupyter_client machinery only with a
session or a pool.
Nothing here imports torch; only kernels do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from tutor.engine.events import DeviceInfo, RunResult
    from tutor.engine.pool import KernelPool
    from tutor.engine.session import KernelSession

__all__ = ["DeviceInfo", "KernelPool", "KernelSession", "RunResult"]


def __getattr__(name: str) -> type:
    if name in ("DeviceInfo", "RunResult"):
        from tutor.engine import events

        return getattr(events, name)
    if name == "KernelSession":
        from tutor.engine.session import KernelSession

        return KernelSession
    if name == "KernelPool":
        from tutor.engine.pool import KernelPool

        return KernelPool
    raise AttributeError(f"module 'tutor.engine' has no attribute {name!r}")
