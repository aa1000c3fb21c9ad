"""The wire to one kernel: an AsyncKernelClient, one poll task per channel, routing by parent.

Every message the kernel sends names the request it answers (parent_header.msg_id); the
poll tasks hand it to whoever registered that msg_id, so runs, completions and probes never
read each other's messages. Messages for nobody (another client's run on a shared kernel,
a run that was abandoned) are dropped.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

import zmq
import zmq.asyncio
from jupyter_client.asynchronous import AsyncKernelClient

log = logging.getLogger("tutor.engine")

CHANNELS = ("shell", "iopub", "stdin", "control")

Handler = Callable[[str, dict], None]  # (channel name, message)


class Connection:
    def __init__(self, client: AsyncKernelClient):
        self.client = client
        self._handlers: dict[str, Handler] = {}
        self._tasks: list[asyncio.Task] = []
        self._hb: zmq.asyncio.Socket | None = None
        self._hb_lock = asyncio.Lock()
        self.closed = False

    @classmethod
    def from_file(cls, connection_file: str) -> "Connection":
        client = AsyncKernelClient()
        client.load_connection_file(connection_file)
        return cls(client)

    # ---- lifecycle

    def start(self) -> None:
        # The heartbeat runs on demand (ping), not as jupyter_client's thread.
        self.client.start_channels(shell=True, iopub=True, stdin=True, hb=False, control=True)
        loop = asyncio.get_running_loop()
        for name in CHANNELS:
            self._tasks.append(loop.create_task(self._poll(name), name=f"ptfund-{name}-poll"))

    async def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
        self._tasks.clear()
        self._handlers.clear()
        if self._hb is not None:
            self._hb.close(linger=0)
            self._hb = None
        try:
            self.client.stop_channels()
        except Exception:  # sockets of a dead kernel may already be gone
            log.debug("stop_channels failed", exc_info=True)

    # ---- routing

    def register(self, msg_id: str, handler: Handler) -> None:
        self._handlers[msg_id] = handler

    def unregister(self, msg_id: str) -> None:
        self._handlers.pop(msg_id, None)

    async def _poll(self, name: str) -> None:
        channel = getattr(self.client, f"{name}_channel")
        while True:
            try:
                msg = await channel.get_msg(timeout=None)
            except asyncio.CancelledError:
                raise
            except zmq.ZMQError:
                if self.closed:
                    return
                log.debug("%s channel error", name, exc_info=True)
                await asyncio.sleep(0.05)  # a socket being torn down; do not spin
                continue
            except Exception:
                # A message that does not deserialize (bad signature, junk): skip it.
                log.debug("bad message on %s", name, exc_info=True)
                continue
            parent = (msg.get("parent_header") or {}).get("msg_id")
            handler = self._handlers.get(parent) if parent else None
            if handler is None:
                continue
            try:
                handler(name, msg)
            except Exception:
                log.exception("handler for %s message %s failed", name, msg.get("msg_type"))

    # ---- sending

    def send(self, channel: str, msg_type: str, content: dict[str, Any],
             handler: Handler | None = None) -> str:
        """Send a request; ``handler`` gets every message whose parent is this request."""
        msg = self.client.session.msg(msg_type, content)
        msg_id = msg["header"]["msg_id"]
        if handler is not None:
            self.register(msg_id, handler)  # before sending: replies cannot outrun us
        getattr(self.client, f"{channel}_channel").send(msg)
        return msg_id

    def reply_input(self, value: str, parent: dict) -> None:
        msg = self.client.session.msg("input_reply", {"value": value}, parent=parent)
        self.client.stdin_channel.send(msg)

    async def ping(self, timeout: float = 1.0) -> bool:
        """Is the kernel's heartbeat answering? (For kernels we did not start: no process to poll.)"""
        async with self._hb_lock:
            if self.closed:
                return False
            if self._hb is None:
                sock = self.client.context.socket(zmq.REQ)
                sock.linger = 0
                sock.connect(self.client._make_url("hb"))
                self._hb = sock
            sock = self._hb
            try:
                await sock.send(b"ping")
                if await sock.poll(int(timeout * 1000)):
                    await sock.recv()
                    return True
            except zmq.ZMQError:
                pass
            # A REQ socket that missed its reply cannot send again: start over next time.
            sock.close(linger=0)
            self._hb = None
            return False
