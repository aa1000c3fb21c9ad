"""Where a session's kernel runs: the one interface between ``KernelSession`` (the
conversation: runs, boot, time limits, recovery) and the place the kernel lives.

Three places today, each in its own module: a local ipykernel the tutor starts (local.py,
forked by the fork server or a new process), an existing kernel reached through its
connection file (attached.py, ``--kernel``), and a kernel on a Jupyter Kernel or Enterprise
Gateway (gateway_backend.py, ``--gateway``). As jupyter_client's provisioners do for
processes, a backend opens the wire to its kernel, says whether the kernel still lives,
interrupts it, replaces it, and lets it go; it never reads a run's messages.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tutor.engine import faults

if TYPE_CHECKING:  # pragma: no cover
    from tutor.engine.connection import Connection

HEARTBEAT_INTERVAL = 1.0  # how often a kernel without a process to poll is asked if it lives
IDENTITY_TIMEOUT = 10.0  # how long a kernel's control channel may stay silent while it beats


class KernelBackend(ABC):
    """One kernel's place. ``Status`` values: None while it lives; else its exit status (an
    int, as subprocess's returncode), "gone" when unknown, or "replaced" when another
    process now answers in its place."""

    #: The kernel process's own stdout/stderr, when the tutor started it.
    log_path: Path | None = None
    #: The session id the kernel signs its messages with (set by the session at boot).
    kernel_session: str | None = None

    @abstractmethod
    async def open(self) -> Connection:
        """Start or find the kernel; return a started wire to it (EngineError if none)."""

    @abstractmethod
    async def exit_status(self, conn: Connection, force: bool = False) -> int | str | None:
        """Whether the kernel lives (see the class doc). Cheap unless ``force``: a backend
        that must ask the kernel over the network may answer None between asks."""

    @abstractmethod
    async def interrupt(self, conn: Connection) -> None:
        """Raise KeyboardInterrupt in the running code."""

    @abstractmethod
    async def restart(self, conn: Connection, already_dead: bool, report: dict[str, Any]) -> Connection:
        """Replace the kernel with a new process (``report`` is what the old one said about
        itself at boot); close ``conn`` and return the wire to the new one."""

    @abstractmethod
    async def close(self) -> None:
        """Let the kernel go (stop it if it is ours); the session has closed the wire."""

    @property
    def launcher(self) -> str | None:
        """How the current kernel was started, for ``doctor`` (None: not ours to start)."""
        return None

    def returncode(self) -> int | None:
        """The exit status of a process the tutor owns, once it has ended."""
        return None

    def start_failure(self) -> str:
        """One sentence for a kernel that ended while starting."""
        fault = self.wire_fault()
        if fault:
            return f"{fault} while the kernel was starting."
        return f"The Python kernel exited while starting ({faults.death_cause(self.returncode())})."

    def wire_fault(self) -> str | None:
        """When the way to the kernel failed rather than the kernel (a gateway that stalled,
        closed the connection or sent what is not a kernel message): that, as the start of a
        sentence ("The gateway at URL stalled")."""
        return None


class Probed(KernelBackend):
    """A kernel the tutor cannot poll as a process: it lives while it answers. The control
    channel answers even while the shell runs code, and says who answers (a new session id
    is a restarted process); while it is silent, the heartbeat tells slow from dead."""

    def __init__(self) -> None:
        self._last_ask = 0.0

    def lost(self, conn: Connection) -> str | None:
        """What the wire itself knows of the kernel's end (a gateway's news), if anything."""
        return None

    async def exit_status(self, conn: Connection, force: bool = False) -> int | str | None:
        lost = self.lost(conn)
        if lost:
            return lost
        loop = asyncio.get_running_loop()
        now = loop.time()
        if not force and now - self._last_ask < HEARTBEAT_INTERVAL:
            return None
        self._last_ask = now
        got: asyncio.Future = loop.create_future()

        def on_reply(channel: str, msg: dict) -> None:
            if channel == "control" and not got.done():
                got.set_result(msg["header"].get("session"))

        # A request sent while the kernel was down can be lost with its connection: ask anew
        # each round, any answer will do.
        msg_ids: list[str] = []
        deadline = loop.time() + IDENTITY_TIMEOUT
        try:
            while True:
                msg_ids.append(conn.send("control", "kernel_info_request", {}, on_reply))
                try:
                    session = await asyncio.wait_for(asyncio.shield(got), HEARTBEAT_INTERVAL)
                    break
                except asyncio.TimeoutError:
                    pass
                # One missed beat can be a busy machine; two in a row is a dead kernel.
                if not await conn.ping(HEARTBEAT_INTERVAL) and not await conn.ping(HEARTBEAT_INTERVAL):
                    return self.lost(conn) or "gone"
                if loop.time() > deadline:
                    return None  # beating but its control thread is stuck: treat as alive
        finally:
            for msg_id in msg_ids:
                conn.unregister(msg_id)
        known = self.kernel_session
        return None if known is None or session == known else "replaced"
