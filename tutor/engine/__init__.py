"""Execution: Jupyter kernel sessions, device detection, streamed output, crash recovery.

Importing this package is cheap (the app and grading read ``tutor.engine.events``): the
jupyter_client machinery loads only when a session, a pool or ``run_once`` is first used.
Nothing here imports torch; only kernels do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tutor.engine.events import DeviceInfo, RunResult

if TYPE_CHECKING:  # pragma: no cover
    from tutor.engine.pool import KernelPool
    from tutor.engine.session import KernelSession

__all__ = ["DeviceInfo", "KernelPool", "KernelSession", "RunResult", "run_once"]


def __getattr__(name: str) -> type:
    if name == "KernelSession":
        from tutor.engine.session import KernelSession

        return KernelSession
    if name == "KernelPool":
        from tutor.engine.pool import KernelPool

        return KernelPool
    raise AttributeError(f"module 'tutor.engine' has no attribute {name!r}")


def run_once(
    code: str, device: str | None = None, timeout: float | None = None, connection_file: str | None = None
) -> RunResult:
    """Run ``code`` in a fresh kernel (or the attached one) and return the result; for the
    CLI, which has no event loop of its own. The kernel is stopped (an attached one only
    disconnected) afterwards."""
    import asyncio

    from tutor.engine.session import KernelSession

    async def main() -> RunResult:
        session = KernelSession(device=device, connection_file=connection_file)
        try:
            await session.start()
            return await session.execute(code, timeout=timeout)
        finally:
            await session.shutdown()

    return asyncio.run(main())
