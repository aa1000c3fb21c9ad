"""Every use of a jupyter_client API that is not public, in one place.

The engine receives messages itself (connection.py) rather than through jupyter_client's
channel classes, and needs two things jupyter_client keeps private; and the kernel
manager (launch.py) waits for a killed kernel its own way, which jupyter_client lets a
subclass change only through a private method. If an upgrade moves one, this module is
the one to change; `scripts/lowest_deps.sh` runs the tests on the
oldest jupyter_client the package allows, and CI on the newest.
"""

from __future__ import annotations

from typing import Any

from jupyter_client.manager import AsyncKernelManager

# The private names used here, by owner (tests/test_private_apis.py looks each one up).
PRIVATE = {
    "jupyter_client.session.Session": ("_cull_digest_history",),
    "jupyter_client.client.KernelClient": ("_make_url",),
    "jupyter_client.manager.AsyncKernelManager": ("_async_wait",),
}


def cull_digest_history(session: Any) -> None:
    """Shrink a Session's replay-protection set as jupyter_client itself does when it
    grows past ``digest_history_size`` (``Session._cull_digest_history``)."""
    session._cull_digest_history()


def channel_url(client: Any, channel: str) -> str:
    """The zmq URL of one of a kernel client's channels, e.g. "hb" (``KernelClient._make_url``)."""
    return client._make_url(channel)


class ExitWaitKernelManager(AsyncKernelManager):
    """An AsyncKernelManager whose wait for a killed kernel to end is ``wait_for_exit``,
    a method subclasses may override (jupyter_client's is the private ``_async_wait``,
    which polls every ``pollinterval`` seconds)."""

    async def wait_for_exit(self, pollinterval: float = 0.1) -> None:
        await super()._async_wait(pollinterval=pollinterval)

    async def _async_wait(self, pollinterval: float = 0.1) -> None:
        await self.wait_for_exit(pollinterval)
