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
# What a gateway answers at once (its version, an interrupt, the websocket's upgrade): a
# gateway silent for this long is reported, not waited for as long as a kernel start.
QUICK_TIMEOUT = 10.0
# The kernel answers control requests even while its shell runs code: a websocket that
# brings nothing for this long while a request waits has stalled on the way.
STALL_TIMEOUT = 5.0
CHANNELS = ("shell", "iopub", "stdin", "control")


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
        from tornado.simple_httpclient import HTTPTimeoutError

        client = AsyncHTTPClient()
        silent = f"The gateway at {self.url} accepted the connection but did not answer {method} {path} within {timeout:g} s."
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
        except HTTPTimeoutError:
            raise EngineError(silent) from None
        except (OSError, HTTPClientError) as exc:
            raise EngineError(f"The gateway at {self.url} cannot be reached ({exc}).") from None
        if response.code == 599:
            if isinstance(response.error, HTTPTimeoutError):
                raise EngineError(silent)
            raise EngineError(f"The gateway at {self.url} cannot be reached ({response.error}).")
        if response.code in (401, 403):
            raise EngineError(
                f"The gateway at {self.url} refused the request ({response.code}): set its token in {ENV_TOKENS[0]}."
            )
        try:
            data = json.loads(response.body) if response.body else None
        except (ValueError, UnicodeDecodeError):
            if response.code < 400:
                raise EngineError(
                    f"The gateway at {self.url} answered {method} {path} with {sample(response.body)}, "
                    "which is not JSON: is this URL a Jupyter gateway?"
                ) from None
            data = None
        return response.code, data

    async def _ok(self, method: str, path: str, body: dict | None = None, what: str = "", **kw: Any) -> Any:
        code, data = await self.request(method, path, body, **kw)
        if code >= 400:
            said = data if isinstance(data, dict) else {}
            detail = said.get("message") or said.get("reason") or f"HTTP {code}"
            raise EngineError(f"The gateway at {self.url} refused to {what}: {str(detail)[:200]}.")
        return data

    async def _object(self, method: str, path: str, body: dict | None = None, what: str = "", **kw: Any) -> dict:
        """An answer that must be a JSON object (a kernel's model, the API's version)."""
        data = await self._ok(method, path, body, what, **kw)
        if not isinstance(data, dict):
            raise EngineError(
                f"The gateway at {self.url} was asked to {what} and answered {sample(json.dumps(data))}, "
                "which is not what a Jupyter gateway sends."
            )
        return data

    async def version(self) -> str:
        data = await self._object("GET", "/api", what="say its version", timeout=QUICK_TIMEOUT)
        return str(data.get("version", "unknown"))

    async def kernelspecs(self) -> dict:
        return await self._object("GET", "/api/kernelspecs", what="list its kernels")

    async def start_kernel(self, name: str | None = None) -> str:
        body: dict[str, Any] = {}
        if name:
            body["name"] = name
        env = kernel_env()
        if env:
            body["env"] = env
        # A gateway that does not answer at all is told within seconds; only a gateway that
        # answers may take as long as a cluster needs to start the kernel.
        await self.version()
        data = await self._object("POST", "/api/kernels", body, what="start a kernel", timeout=KERNEL_START_TIMEOUT)
        kernel_id = data.get("id")
        if not isinstance(kernel_id, str) or not kernel_id or len(kernel_id) > 200:
            raise EngineError(
                f"The gateway at {self.url} was asked to start a kernel and answered {sample(json.dumps(data))}, "
                "which names no kernel id."
            )
        return kernel_id

    async def kernel(self, kernel_id: str, timeout: float = QUICK_TIMEOUT) -> dict | None:
        """The gateway's model of the kernel (execution_state, ...), None once it is gone."""
        code, data = await self.request("GET", f"/api/kernels/{quote(kernel_id)}", timeout=timeout)
        return data if code == 200 and isinstance(data, dict) else None

    async def interrupt(self, kernel_id: str) -> None:
        await self._ok(
            "POST", f"/api/kernels/{quote(kernel_id)}/interrupt", what="interrupt the kernel", timeout=QUICK_TIMEOUT
        )

    async def restart(self, kernel_id: str) -> None:
        await self._ok(
            "POST", f"/api/kernels/{quote(kernel_id)}/restart", what="restart the kernel", timeout=KERNEL_START_TIMEOUT
        )

    async def delete(self, kernel_id: str) -> None:
        code, _ = await self.request("DELETE", f"/api/kernels/{quote(kernel_id)}", timeout=QUICK_TIMEOUT)
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


def sample(data: str | bytes | None, limit: int = 60) -> str:
    """A short, printable quote of what a gateway sent, for a sentence."""
    if not data:
        return "nothing"
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return repr(text[:limit] + ("..." if len(text) > limit else ""))


class NotAMessage(ValueError):
    """A websocket frame that is not a kernel message of the Jupyter protocol."""


def _decode(message: str | bytes) -> dict:
    """A websocket message as a kernel message (NotAMessage otherwise); binary ones
    (messages with buffers) carry their JSON part first, after a table of offsets."""
    try:
        if isinstance(message, bytes):
            count = struct.unpack("!I", message[:4])[0]
            if not 1 <= count <= 4096 or len(message) < 4 * (count + 1):
                raise NotAMessage("a bad table of offsets")
            offsets = [*struct.unpack("!" + "I" * count, message[4 : 4 * (count + 1)]), len(message)]
            msg = json.loads(message[offsets[0] : offsets[1]].decode("utf-8"))
        else:
            msg = json.loads(message)
    except (ValueError, struct.error, UnicodeDecodeError, RecursionError) as exc:
        raise NotAMessage(str(exc)) from None
    if not isinstance(msg, dict):
        raise NotAMessage("not an object")
    header, parent = msg.get("header"), msg.get("parent_header")
    if not isinstance(header, dict) or not isinstance(header.get("msg_type"), str):
        raise NotAMessage("no header with a msg_type")
    if not isinstance(parent, dict) or not isinstance(msg.get("content"), dict):
        raise NotAMessage("no parent_header or content object")
    if msg.get("channel", "iopub") not in CHANNELS or not isinstance(msg.get("metadata", {}), dict):
        raise NotAMessage("no known channel")
    return msg


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
        # websocket itself ended, "broken" when the gateway stalled or sent what is not a
        # kernel message (``fault`` then says which, in a sentence).
        self.lost: str | None = None
        self.fault: str | None = None
        self._last_frame = 0.0  # loop time of the last frame received
        self._waiting_since: float | None = None  # first request sent since that frame
        # Connection counts the messages zmq refused for their size; a gateway's websocket
        # has its own limit and ends the connection instead (lost becomes "closed").
        self.refused = 0

    async def open(self) -> None:
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        request = HTTPRequest(
            self.client.channels_url(self.kernel_id),
            headers=self.client.headers(),
            connect_timeout=QUICK_TIMEOUT,
            request_timeout=QUICK_TIMEOUT,
        )
        try:
            self._ws = await websocket_connect(request, max_message_size=256 * 1024 * 1024)
        except Exception as exc:
            raise EngineError(f"The gateway at {self.client.url} did not open the kernel's channels ({exc}).") from None
        # Requests are small and each waits for its answer: Nagle's algorithm would hold
        # them back for the previous segment's ACK (tens of ms a request).
        assert self._ws.protocol is not None  # a connected websocket has its protocol
        self._ws.protocol.set_nodelay(True)
        self._last_frame = asyncio.get_running_loop().time()
        self._reader = asyncio.get_running_loop().create_task(self._read(), name="ptfund-gateway-read")

    def _break(self, fault: str) -> None:
        """The wire, not the kernel, failed: say so once and stop reading."""
        if self.lost is None or self.lost == "closed":
            self.lost, self.fault = "broken", fault
        if self._ws is not None:
            self._ws.close()

    async def _read(self) -> None:
        ws = self._ws
        assert ws is not None  # open() connects before it starts reading
        loop = asyncio.get_running_loop()
        while True:
            message = await ws.read_message()
            _quickack(ws)
            if message is None:
                if not self.closed and self.lost is None:
                    self.lost = "closed"
                    self.fault = f"The gateway at {self.client.url} closed the kernel's connection"
                return
            self._last_frame, self._waiting_since = loop.time(), None
            try:
                msg = _decode(message)
            except NotAMessage as exc:
                log.debug("not a kernel message from the gateway: %s", exc)
                self._break(
                    f"The gateway at {self.client.url} sent {sample(message)}, which is not a kernel message "
                    f"({exc}), so the connection to the kernel was dropped"
                )
                return
            channel = msg.pop("channel", None) or "iopub"
            parent = msg["parent_header"].get("msg_id")
            if not parent:
                content = msg["content"]
                if msg["header"]["msg_type"] == "status" and content.get("execution_state") in ("restarting", "dead"):
                    self.lost = content["execution_state"]
                continue
            handler = self._handlers.get(parent) if isinstance(parent, str) else None
            if handler is None:
                continue
            msg.setdefault("msg_type", msg["header"]["msg_type"])
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
            # Wait for the reader to end without taking its cancellation for ours: a caller
            # cancelled meanwhile is still cancelled.
            await asyncio.wait([self._reader])
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
        from tornado.websocket import WebSocketClosedError

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
        if self._waiting_since is None:
            self._waiting_since = asyncio.get_running_loop().time()
        try:
            self._ws.write_message(json.dumps(wire, default=json_default))
        except WebSocketClosedError:
            # As a message to a dead kernel's socket: lost, and the reader has said why.
            log.debug("gateway websocket closed; %s message dropped", channel)

    def send(self, channel: str, msg_type: str, content: dict[str, Any], handler: Handler | None = None) -> str:
        msg = self.session.msg(msg_type, content)
        msg_id = msg["header"]["msg_id"]
        if handler is not None:
            self.register(msg_id, handler)
        self._write(channel, msg)
        return msg_id

    def reply_input(self, value: str, parent: dict) -> None:
        self._write("stdin", self.session.msg("input_reply", {"value": value}, parent=parent))

    def stalled(self) -> bool:
        """Has a request waited STALL_TIMEOUT with nothing at all coming back? (The kernel's
        control channel answers at once even while it runs code.)"""
        waiting = self._waiting_since
        if waiting is None or self.lost:
            return bool(self.lost == "broken")
        silent = asyncio.get_running_loop().time() - max(waiting, self._last_frame)
        if silent < STALL_TIMEOUT:
            return False
        self._break(
            f"The gateway at {self.client.url} stopped passing the kernel's messages "
            f"(nothing came back for {silent:.0f} s)"
        )
        return True

    async def ping(self, timeout: float = 1.0) -> bool:
        """Does the gateway still have the kernel, alive, and pass its messages?"""
        if self.closed or self.lost or self.stalled():
            return False
        try:
            model = await self.client.kernel(self.kernel_id, timeout=max(timeout, STALL_TIMEOUT))
        except EngineError:
            return False
        state = model.get("execution_state") if model else "dead"
        if state in ("dead", "restarting"):
            self.lost = self.lost or state
            return False
        return not self.stalled()
