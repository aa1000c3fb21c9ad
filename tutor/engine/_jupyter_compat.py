"""Every use of a jupyter_client API that is not public, in one place.

The engine receives messages itself (connection.py) rather than through jupyter_client's
channel classes, and needs two things jupyter_client keeps private. If an upgrade moves
either, this module is the one to change; `scripts/lowest_deps.sh` runs the tests on the
oldest jupyter_client the package allows, and CI on the newest.
"""

from __future__ import annotations

from typing import Any


def cull_digest_history(session: Any) -> None:
    """Shrink a Session's replay-protection set as jupyter_client itself does when it
    grows past ``digest_history_size`` (``Session._cull_digest_history``)."""
    session._cull_digest_history()


def channel_url(client: Any, channel: str) -> str:
    """The zmq URL of one of a kernel client's channels, e.g. "hb" (``KernelClient._make_url``)."""
    return client._make_url(channel)
