"""An existing kernel reached through its connection file (``--kernel``): a Jupyter server's,
a nanny's, a GPU host's through an SSH tunnel. There is no process to signal or poll, so
interrupts go over the control channel and liveness is its answers (backend.Probed); a
restart is asked for, and whatever manages the kernel brings it back."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
from pathlib import Path
from typing import Any

from tutor.engine.backend import Probed
from tutor.engine.connection import Connection
from tutor.engine.device import PID_EXPRESSION, parse_expression
from tutor.engine.errors import EngineError, KernelDied

ATTACH_TIMEOUT = 30.0  # how long an attached kernel may take to answer or come back
POLL_INTERVAL = 0.05


class AttachedBackend(Probed):
    def __init__(self, connection_file: str, *, interrupt_grace: float):
        super().__init__()
        self.connection_file = connection_file
        self.interrupt_grace = interrupt_grace

    async def open(self) -> Connection:
        path = Path(self.connection_file)
        try:
            conn = Connection.from_file(str(path))
        except (OSError, ValueError, KeyError) as exc:
            raise EngineError(f"Cannot read the kernel connection file {path}: {exc}.") from None
        conn.start()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + ATTACH_TIMEOUT
        while not await conn.ping(timeout=1.0):
            if loop.time() > deadline:
                await conn.close()
                raise EngineError(f"No kernel answered at {path} within {ATTACH_TIMEOUT:g} s; is it running?")
        return conn

    async def interrupt(self, conn: Connection) -> None:
        conn.send("control", "interrupt_request", {})

    async def restart(self, conn: Connection, already_dead: bool, report: dict[str, Any]) -> Connection:
        """Ask the kernel to restart (shutdown_request with restart=True) and wait until a
        new process answers; a local kernel that ignores the request is killed."""
        old_pid = report.get("pid")
        self.kernel_session = None  # whoever answers next is the kernel we wait for
        local = report.get("host") == socket.gethostname()
        loop = asyncio.get_running_loop()
        if not already_dead:
            conn.send("control", "shutdown_request", {"restart": True})
            deadline = loop.time() + self.interrupt_grace
            # Another host's process cannot tell us when it exits: look until it has.
            while loop.time() < deadline and local and old_pid and _pid_alive(old_pid):  # noqa: ASYNC110
                await asyncio.sleep(POLL_INTERVAL)
            if local and old_pid and _pid_alive(old_pid):
                try:
                    os.kill(old_pid, signal.SIGKILL)
                except OSError:
                    pass
        await conn.close()
        conn = Connection.from_file(self.connection_file)
        conn.start()
        try:
            await self._wait_for_new_process(conn, old_pid)
        except BaseException:
            await conn.close()
            raise
        return conn

    async def _wait_for_new_process(self, conn: Connection, old_pid: int | None) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + ATTACH_TIMEOUT
        while True:
            if loop.time() > deadline:
                raise KernelDied(
                    "The kernel you attached to did not come back after a restart; "
                    "start it again and reattach with --kernel."
                )
            got: asyncio.Future = loop.create_future()

            def on_reply(channel: str, msg: dict, got: asyncio.Future = got) -> None:
                if channel == "shell" and not got.done():
                    got.set_result(msg)

            msg_id = conn.send(
                "shell",
                "execute_request",
                {
                    "code": "",
                    "silent": True,
                    "store_history": False,
                    "allow_stdin": False,
                    "user_expressions": {"pid": PID_EXPRESSION},
                },
                on_reply,
            )
            try:
                reply = await asyncio.wait_for(got, 1.0)
            except asyncio.TimeoutError:
                continue
            finally:
                conn.unregister(msg_id)
            pid = parse_expression(reply.get("content") or {}, "pid")
            if pid is not None and pid != old_pid:
                self.kernel_session = reply["header"].get("session")
                return

    async def close(self) -> None:
        """Only disconnect: the kernel is not ours."""


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
