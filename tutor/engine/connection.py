"""The wire to one kernel: an AsyncKernelClient, one poll task per channel, routing by parent.

Every message the kernel sends names the request it answers (parent_header.msg_id); the
poll tasks hand it to whoever registered that msg_id, so runs, completions and probes never
read each other's messages. Messages for nobody (another client's run on a shared kernel,
a run that was abandoned) are dropped.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import os
from collections.abc import Callable
from typing import Any

import zmq
import zmq.asyncio
from jupyter_client.asynchronous import AsyncKernelClient

from tutor.engine._jupyter_compat import channel_url, cull_digest_history
from tutor.engine.output import MAX_MESSAGE_BYTES

log = logging.getLogger("tutor.engine")

CHANNELS = ("shell", "iopub", "stdin", "control")
REFUSING = ("shell", "iopub", "stdin")  # the channels learner code can fill
# Messages zmq reads ahead of us per channel (its default is 1,000): with MAX_MESSAGE_BYTES
# each, this bounds what a flood of large displays holds in the host while we catch up;
# the rest waits in the kernel, which drops what it cannot queue, as it always did.
QUEUED_MESSAGES = 8
DRAIN_BATCH = 500  # messages handled per loop turn before yielding to other tasks
FLOOD_MESSAGES, FLOOD_WINDOW, FLOOD_PAUSE = 100, 0.1, 0.01  # >100 messages in 100 ms: batch

RECONNECT_FIRST_MS, RECONNECT_MAX_MS = 5, 1000


def fast_reconnect(sockopts: dict[int, int]) -> dict[int, int]:
    """Make a zmq context's next sockets retry a refused connection after 5 ms, backing off
    to 1 s (zmq's default first retry is 100 ms): a fresh kernel binds its ports a moment
    after its client connects. Returns the defaults it replaced."""
    options: dict[int, int] = {zmq.RECONNECT_IVL: RECONNECT_FIRST_MS, zmq.RECONNECT_IVL_MAX: RECONNECT_MAX_MS}
    saved = {opt: sockopts[opt] for opt in options if opt in sockopts}
    sockopts.update(options)
    return saved


Handler = Callable[[str, dict], None]  # (channel name, message)


DELIM = b"<IDS|MSG>"


class _SessionView:
    """The parts of a jupyter_client Session that receiving needs, read once: traitlets
    attribute access costs more than the rest of a small message's handling."""

    def __init__(self, session):
        self.auth = session.auth
        self.unpack = session.unpack
        self._session = session
        self.digests = session.digest_history
        self.digests_size = session.digest_history_size

    def add_digest(self, signature: bytes) -> None:
        """Remember a signature against replays, bounded as jupyter_client bounds it."""
        if self.digests_size == 0:
            return
        self.digests.add(signature)
        if len(self.digests) > self.digests_size:
            cull_digest_history(self._session)
            self.digests = self._session.digest_history


class Connection:
    def __init__(self, client: AsyncKernelClient):
        self.client = client
        self._handlers: dict[str, Handler] = {}
        self._tasks: list[asyncio.Task] = []
        self._hb: zmq.asyncio.Socket | None = None
        self._hb_lock = asyncio.Lock()
        self._session: _SessionView | None = None
        self._loop: asyncio.AbstractEventLoop  # set by start()
        self._plain: dict[str, zmq.Socket] = {}  # each channel's socket, without asyncio's machinery
        self._fds: dict[str, int] = {}  # the descriptors the event loop watches (_listen)
        self._paused: set[str] = set()  # channels not watched for a moment (a flood)
        self._flood: dict[str, tuple[float, int]] = {}  # per channel: when its window began, messages in it
        self.closed = False
        # Disconnections of the channels that carry what code prints, each normally one
        # message refused for its size (a kernel that died also counts: its run crashed).
        self.refused = 0

    @classmethod
    def from_file(cls, connection_file: str) -> Connection:
        client = AsyncKernelClient()
        client.load_connection_file(connection_file)
        return cls(client)

    # ---- lifecycle

    def start(self) -> None:
        context = self.client.context
        bounded: dict[int, int] = {zmq.MAXMSGSIZE: MAX_MESSAGE_BYTES, zmq.RCVHWM: QUEUED_MESSAGES}
        options = (zmq.RECONNECT_IVL, zmq.RECONNECT_IVL_MAX, *bounded)
        saved = fast_reconnect(context.sockopts)  # for these sockets only: the context may be shared
        saved.update({opt: context.sockopts[opt] for opt in bounded if opt in context.sockopts})
        context.sockopts.update(bounded)
        try:
            # The heartbeat runs on demand (ping), not as jupyter_client's thread.
            self.client.start_channels(shell=True, iopub=True, stdin=True, hb=False, control=True)
        finally:
            for opt in options:
                context.sockopts.pop(opt, None)
            context.sockopts.update(saved)
        loop = self._loop = asyncio.get_running_loop()
        for name in CHANNELS:
            self._listen(name)
        for name in REFUSING:
            self._tasks.append(loop.create_task(self._watch(name), name=f"ptfund-{name}-watch"))

    async def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._unlisten()
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            # Wait for the pollers to end without taking their cancellation for ours: a
            # caller cancelled meanwhile is still cancelled.
            await asyncio.wait(self._tasks)
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

    def _listen(self, name: str) -> None:
        """Read ``name``'s messages as they arrive: the event loop watches a copy of the
        socket's file descriptor and calls ``_readable``, which drains what is queued
        through a plain shadow of the socket. (Awaiting the asyncio socket's poll() built a
        poller, futures and a task wake-up per message: most of the host's CPU in relaying.)"""
        sock = getattr(self.client, f"{name}_channel").socket
        plain = self._plain[name] = zmq.Socket.shadow(sock.underlying)
        self._flood[name] = (self._loop.time(), 0)
        fd = None
        try:
            # A copy of the descriptor, so the loop's watch is ours alone whatever pyzmq registers.
            fd = os.dup(plain.FD)
            self._loop.add_reader(fd, self._readable, name)
        except (NotImplementedError, OSError):  # a loop that watches no descriptors (Windows' proactor)
            if fd is not None:
                os.close(fd)
            self._tasks.append(self._loop.create_task(self._poll(name), name=f"ptfund-{name}-poll"))
            return
        self._fds[name] = fd
        self._loop.call_soon(self._readable, name)  # what arrived before the watch began

    async def _poll(self, name: str) -> None:
        """``_listen`` where the loop cannot watch a descriptor: pyzmq's asyncio poll."""
        sock = getattr(self.client, f"{name}_channel").socket
        while not self.closed:
            if name in self._paused:
                await asyncio.sleep(FLOOD_PAUSE)
                continue
            try:
                await sock.poll(flags=zmq.POLLIN)
            except zmq.ZMQError:
                if self.closed:
                    return
                log.debug("%s channel error", name, exc_info=True)
                await asyncio.sleep(0.05)  # a socket being torn down; do not spin
                continue
            self._readable(name)
            await asyncio.sleep(0)

    def _unlisten(self) -> None:
        for name, fd in self._fds.items():  # (channels read by _poll end with their tasks)
            if name not in self._paused:
                self._loop.remove_reader(fd)
            os.close(fd)
        self._fds.clear()
        self._paused.clear()

    def _readable(self, name: str) -> None:
        """Handle what is queued on ``name``. zmq's descriptor only says that something
        changed: reading until nothing is left is what re-arms it."""
        if self.closed or name in self._paused:
            return
        try:
            count = self._drain(name, self._plain[name], DRAIN_BATCH)
        except zmq.ZMQError:  # a socket being torn down
            log.debug("%s channel error", name, exc_info=True)
            return
        now = self._loop.time()
        start, seen = self._flood[name]
        if now - start > FLOOD_WINDOW:
            start, seen = now, 0
        self._flood[name] = (start, seen + count)
        if seen + count > FLOOD_MESSAGES:
            # In a flood, pause a moment so messages arrive in batches: each wake-up costs
            # about as much as handling a message. Ordinary runs never reach the rate.
            self._paused.add(name)
            if name in self._fds:
                self._loop.remove_reader(self._fds[name])
            self._loop.call_later(FLOOD_PAUSE, self._resume, name)
        elif count == DRAIN_BATCH:  # more may be queued, and the descriptor will not say so
            self._loop.call_soon(self._readable, name)

    def _resume(self, name: str) -> None:
        if self.closed or name not in self._paused:
            return
        self._paused.discard(name)
        if name in self._fds:
            self._loop.add_reader(self._fds[name], self._readable, name)
        self._readable(name)

    def _drain(self, name: str, drain: zmq.Socket, most: int) -> int:
        """Handle up to ``most`` queued messages; how many were read."""
        count = 0
        for count in range(1, most + 1):
            try:
                frames = drain.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return count - 1
            except zmq.ZMQError:
                return count - 1
            try:
                msg = self._deserialize(frames)
            except Exception:
                # A message that does not verify or parse (bad signature, junk): skip it.
                log.debug("bad message on %s", name, exc_info=True)
                continue
            self._dispatch(name, msg)
        return count

    async def _watch(self, name: str) -> None:
        """Count the messages zmq refused on a channel (over MAX_MESSAGE_BYTES) and connect
        the channel again: after refusing one, zmq drops the connection and does not retry."""
        sock = getattr(self.client, f"{name}_channel").socket
        monitor = sock.get_monitor_socket(zmq.EVENT_DISCONNECTED)
        try:
            while True:
                await monitor.recv_multipart()
                if self.closed:
                    return
                self.refused += 1
                self._drain(name, self._plain[name], 1 << 30)  # what came before it: a reconnect would drop it
                url = channel_url(self.client, name)
                try:
                    sock.disconnect(url)
                except zmq.ZMQError:
                    pass
                sock.connect(url)
        finally:
            try:
                sock.disable_monitor()
            except zmq.ZMQError:
                pass
            monitor.close(linger=0)

    def _deserialize(self, frames: list[bytes]) -> dict:
        """jupyter_client's Session.deserialize without the per-message date parsing and
        protocol adaptation (our kernels speak protocol 5); the signature is still checked."""
        session = self._session
        if session is None:
            session = self._session = _SessionView(self.client.session)
        try:
            start = frames.index(DELIM) + 1
        except ValueError:
            raise ValueError("no message delimiter") from None
        parts = frames[start:]
        if len(parts) < 5:
            raise ValueError("malformed message")
        if session.auth is not None:
            signature = parts[0]
            if not signature:
                raise ValueError("unsigned message")
            mac = session.auth.copy()
            for part in parts[1:5]:
                mac.update(part)
            if not hmac.compare_digest(signature, mac.hexdigest().encode()):
                raise ValueError("invalid signature")
            if signature in session.digests:
                raise ValueError("duplicate signature")
            session.add_digest(signature)
        unpack = session.unpack
        header = unpack(parts[1])
        return {
            "header": header,
            "msg_id": header.get("msg_id"),
            "msg_type": header.get("msg_type"),
            "parent_header": unpack(parts[2]),
            "metadata": unpack(parts[3]),
            "content": unpack(parts[4]),
            "buffers": [memoryview(b) for b in parts[5:]],
        }

    def _dispatch(self, name: str, msg: dict) -> None:
        parent = (msg.get("parent_header") or {}).get("msg_id")
        handler = self._handlers.get(parent) if parent else None
        if handler is None:
            return
        try:
            handler(name, msg)
        except Exception:
            log.exception("handler for %s message %s failed", name, msg.get("msg_type"))

    # ---- sending

    def send(self, channel: str, msg_type: str, content: dict[str, Any], handler: Handler | None = None) -> str:
        """Send a request; ``handler`` gets every message whose parent is this request."""
        msg = self.client.session.msg(msg_type, content)
        msg_id = msg["header"]["msg_id"]
        if handler is not None:
            self.register(msg_id, handler)  # before sending: replies cannot outrun us
        self._send(channel, msg)
        return msg_id

    def reply_input(self, value: str, parent: dict) -> None:
        self._send("stdin", self.client.session.msg("input_reply", {"value": value}, parent=parent))

    def _send(self, channel: str, msg: dict) -> None:
        plain = self._plain.get(channel)
        if plain is None:  # not started
            getattr(self.client, f"{channel}_channel").send(msg)
            return
        self.client.session.send(plain, msg)
        # A send on the socket can take the descriptor's news of a message that arrived
        # meanwhile: look once more.
        self._loop.call_soon(self._readable, channel)

    async def ping(self, timeout: float = 1.0) -> bool:
        """Is the kernel's heartbeat answering? (For kernels we did not start: no process to poll.)"""
        async with self._hb_lock:
            if self.closed:
                return False
            if self._hb is None:
                sock = self.client.context.socket(zmq.REQ)
                sock.linger = 0
                sock.connect(channel_url(self.client, "hb"))
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
