"""Kernels on a Jupyter Kernel Gateway or Enterprise Gateway (``--gateway URL``).

The gateway starts, interrupts, restarts and deletes kernels over REST (``/api/kernels``)
and relays the kernel protocol over one websocket per kernel
(``/api/kernels/ID/channels``: JSON messages that name their channel). Enterprise Gateway
runs those kernels on a cluster (Kubernetes, YARN, Docker); to this module it is the same API.

``GatewayConnection`` has the shape of ``connection.Connection`` (send, register, close), so
a KernelSession runs code, streams output and enforces time limits the same way whichever
wire it has. What differs lives here: no process to poll and no heartbeat socket, so the
gateway's own news (a ``restarting`` or ``dead`` status for a kernel that died) and its REST
model of the kernel say whether the kernel lives.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import struct
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit, urlunsplit

from tutor.engine.errors import EngineError

if TYPE_CHECKING:  # pragma: no cover
    from tornado.websocket import WebSocketClientConnection

    from tutor.engine.connection import Handler

log = logging.getLogger("tutor.engine")

ENV_URL = "PTFUND_TUTOR_GATEWAY"
# The tutor's own name first; then the names Jupyter Server's gateway client reads.
ENV_TOKENS = ("PTFUND_TUTOR_GATEWAY_TOKEN", "JUPYTER_GATEWAY_AUTH_TOKEN", "KG_AUTH_TOKEN")
ENV_KERNEL = "PTFUND_TUTOR_GATEWAY_KERNEL"  # kernelspec name on the gateway (default: its default)
REQUEST_TIMEOUT = 30.0
# A remote kernel may have to be scheduled on a cluster node and pull an image first.
KERNEL_START_TIMEOUT = 300.0


def gateway_url(explicit: str | None = None) -> str | None:
    url = explicit or os.environ.get(ENV_URL) or None
    return url.rstrip("/") if url else None


def gateway_token() -> str | None:
    return next((os.environ[name] for name in ENV_TOKENS if os.environ.get(name)), None)


def kernel_env() -> dict[str, str]:
    """KERNEL_* variables for the gateway to give the kernel (Enterprise Gateway reads e.g.
    KERNEL_USERNAME and KERNEL_NAMESPACE). Empty unless some are set: a Kernel Gateway that
    receives an env starts the kernel with only that and PATH, not its own environment
    (which may hold what a GPU needs)."""
    return {k: v for k, v in os.environ.items() if k.startswith("KERNEL_")}


def _ws_url(http_url: str) -> str:
    parts = urlsplit(http_url)
    scheme = {"http": "ws", "https": "wss"}.get(parts.scheme, parts.scheme)
    return urlunsplit((scheme, *parts[1:]))


class GatewayClient:
    """The REST half: kernelspecs and the life of kernels."""

    def __init__(self, url: str, token: str | None = None):
        if not url.startswith(("http://", "https://")):
            raise EngineError(f"The gateway URL {url!r} must start with http:// or https://.")
        self.url = url.rstrip("/")
        self.token = token if token is not None else gateway_token()

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"token {self.token}"} if self.token else {}

    async def request(
        self, method: str, path: str, body: dict | None = None, *, timeout: float = REQUEST_TIMEOUT
    ) -> tuple[int, Any]:
        """(status code, decoded JSON or None). Network failures become one EngineError sentence."""
        from tornado.httpclient import AsyncHTTPClient, HTTPClientError

        client = AsyncHTTPClient()
        try:
            response = await client.fetch(
                self.url + path,
                method=method,
                headers={**self.headers(), "Content-Type": "application/json"},
                body=None if body is None and method == "GET" else json.dumps(body or {}),
                allow_nonstandard_methods=True,
                request_timeout=timeout,
                raise_error=False,
            )
        except (OSError, HTTPClientError) as exc:
            raise EngineError(f"The gateway at {self.url} cannot be reached ({exc}).") from None
        if response.code == 599:
            raise EngineError(f"The gateway at {self.url} cannot be reached ({response.error}).")
        if response.code in (401, 403):
            raise EngineError(
                f"The gateway at {self.url} refused the request ({response.code}): set its token in {ENV_TOKENS[0]}."
            )
        try:
            data = json.loads(response.body) if response.body else None
        except ValueError:
            data = None
        return response.code, data

    async def _ok(self, method: str, path: str, body: dict | None = None, what: str = "", **kw: Any) -> Any:
        code, data = await self.request(method, path, body, **kw)
        if code >= 400:
            detail = (data or {}).get("message") or (data or {}).get("reason") or f"HTTP {code}"
            raise EngineError(f"The gateway at {self.url} could not {what}: {detail}.")
        return data

    async def version(self) -> str:
        data = await self._ok("GET", "/api", what="say its version")
        return str((data or {}).get("version", "unknown"))

    async def kernelspecs(self) -> dict:
        return await self._ok("GET", "/api/kernelspecs", what="list its kernels") or {}

    async def start_kernel(self, name: str | None = None) -> str:
        body: dict[str, Any] = {}
        if name:
            body["name"] = name
        env = kernel_env()
        if env:
            body["env"] = env
        data = await self._ok("POST", "/api/kernels", body, what="start a kernel", timeout=KERNEL_START_TIMEOUT)
        return str(data["id"])

    async def kernel(self, kernel_id: str) -> dict | None:
        """The gateway's model of the kernel (execution_state, ...), None once it is gone."""
        code, data = await self.request("GET", f"/api/kernels/{quote(kernel_id)}")
        return data if code == 200 and isinstance(data, dict) else None

    async def interrupt(self, kernel_id: str) -> None:
        await self._ok("POST", f"/api/kernels/{quote(kernel_id)}/interrupt", what="interrupt the kernel")

    async def restart(self, kernel_id: str) -> None:
        await self._ok(
            "POST", f"/api/kernels/{quote(kernel_id)}/restart", what="restart the kernel", timeout=KERNEL_START_TIMEOUT
        )

    async def delete(self, kernel_id: str) -> None:
        code, _ = await self.request("DELETE", f"/api/kernels/{quote(kernel_id)}")
        if code >= 400 and code != 404:
            log.debug("gateway kernel %s delete: HTTP %s", kernel_id, code)

    def channels_url(self, kernel_id: str) -> str:
        return f"{_ws_url(self.url)}/api/kernels/{quote(kernel_id)}/channels"


def _quickack(ws: WebSocketClientConnection) -> None:
    """ACK at once (Linux). Jupyter Server leaves Nagle's algorithm on for its websockets, so
    its second small message in a row waits for our ACK of the first, which a delayed ACK
    holds back ~40 ms: every reply would pay that."""
    import socket

    sock = getattr(getattr(ws.protocol, "stream", None), "socket", None)
    if sock is not None and hasattr(socket, "TCP_QUICKACK"):
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
        except OSError:
            pass


def _decode(message: str | bytes) -> dict:
    """A websocket message as a dict; binary ones (messages with buffers) carry their JSON
    part first, after a table of offsets."""
    if isinstance(message, bytes):
        count = struct.unpack("!i", message[:4])[0]
        offsets = [*struct.unpack("!" + "I" * count, message[4 : 4 * (count + 1)]), len(message)]
        return json.loads(message[offsets[0] : offsets[1]].decode("utf-8"))
    return json.loads(message)


class GatewayConnection:
    """The kernel protocol over the gateway's websocket, routed by parent msg_id as Connection does."""

    def __init__(self, client: GatewayClient, kernel_id: str):
        from jupyter_client.session import Session

        self.client = client
        self.kernel_id = kernel_id
        self.session = Session(username="ptfund-tutor")
        self._handlers: dict[str, Handler] = {}
        self._ws: WebSocketClientConnection | None = None
        self._reader: asyncio.Task | None = None
        self.closed = False
        # What the gateway said about the kernel behind our back: "restarting" (it died and
        # the gateway started a new process) or "dead" (and could not); "closed" when the
        # websocket itself ended.
        self.lost: str | None = None

    async def open(self) -> None:
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        request = HTTPRequest(
            self.client.channels_url(self.kernel_id),
            headers=self.client.headers(),
            connect_timeout=REQUEST_TIMEOUT,
            request_timeout=REQUEST_TIMEOUT,
        )
        try:
            self._ws = await websocket_connect(request, max_message_size=256 * 1024 * 1024)
        except Exception as exc:
            raise EngineError(f"The gateway at {self.client.url} did not open the kernel's channels ({exc}).") from None
        # Requests are small and each waits for its answer: Nagle's algorithm would hold
        # them back for the previous segment's ACK (tens of ms a request).
        assert self._ws.protocol is not None  # a connected websocket has its protocol
        self._ws.protocol.set_nodelay(True)
        self._reader = asyncio.get_running_loop().create_task(self._read(), name="ptfund-gateway-read")

    async def _read(self) -> None:
        ws = self._ws
        assert ws is not None  # open() connects before it starts reading
        while True:
            message = await ws.read_message()
            _quickack(ws)
            if message is None:
                if not self.closed and self.lost is None:
                    self.lost = "closed"
                return
            try:
                msg = _decode(message)
            except (ValueError, struct.error, UnicodeDecodeError):
                log.debug("bad message from the gateway", exc_info=True)
                continue
            channel = msg.pop("channel", None) or "iopub"
            parent = (msg.get("parent_header") or {}).get("msg_id")
            if not parent:
                content = msg.get("content") or {}
                if msg.get("msg_type") == "status" and content.get("execution_state") in ("restarting", "dead"):
                    self.lost = content["execution_state"]
                continue
            handler = self._handlers.get(parent)
            if handler is None:
                continue
            msg.setdefault("msg_type", (msg.get("header") or {}).get("msg_type"))
            try:
                handler(channel, msg)
            except Exception:
                log.exception("handler for %s message %s failed", channel, msg.get("msg_type"))

    async def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self._reader is not None:
            self._reader.cancel()
            try:
                await self._reader
            except (asyncio.CancelledError, Exception):
                pass
        if self._ws is not None:
            self._ws.close()
            self._ws = None
        self._handlers.clear()

    def register(self, msg_id: str, handler: Handler) -> None:
        self._handlers[msg_id] = handler

    def unregister(self, msg_id: str) -> None:
        self._handlers.pop(msg_id, None)

    def _write(self, channel: str, msg: dict) -> None:
        from jupyter_client.jsonutil import json_default

        if self._ws is None:
            raise EngineError("The gateway connection is closed.")
        wire = {
            "header": msg["header"],
            "parent_header": msg["parent_header"],
            "metadata": msg["metadata"],
            "content": msg["content"],
            "buffers": [],
            "channel": channel,
        }
        self._ws.write_message(json.dumps(wire, default=json_default))

    def send(self, channel: str, msg_type: str, content: dict[str, Any], handler: Handler | None = None) -> str:
        msg = self.session.msg(msg_type, content)
        msg_id = msg["header"]["msg_id"]
        if handler is not None:
            self.register(msg_id, handler)
        self._write(channel, msg)
        return msg_id

    def reply_input(self, value: str, parent: dict) -> None:
        self._write("stdin", self.session.msg("input_reply", {"value": value}, parent=parent))

    async def ping(self, timeout: float = 1.0) -> bool:
        """Does the gateway still have the kernel, alive?"""
        if self.closed or self.lost:
            return False
        try:
            model = await asyncio.wait_for(self.client.kernel(self.kernel_id), max(timeout, 5.0))
        except (asyncio.TimeoutError, EngineError):
            return False
        state = model.get("execution_state") if model else "dead"
        if state in ("dead", "restarting"):
            self.lost = self.lost or state
            return False
        return True
