"""Gateways that misbehave, on 127.0.0.1, for the tests (tests/test_gateway_faults.py).

Run as ``python tests/fake_gateway.py MODE [UPSTREAM]``; it prints its port, then serves
until killed. Modes:

- ``body=TEXT``: every REST request is answered 200 with TEXT (``hello``, ``[1, 2]``).
- ``junk-ws``: a proper REST API; its websocket answers every message with well-formed
  JSON that is not a kernel message.
- ``quiet-ws``: a proper REST API; its websocket accepts and never says anything.
- ``silent``: accepts connections and never answers.
- ``stall`` / ``corrupt`` with UPSTREAM (a real gateway's URL): a TCP proxy in front of
  it that, after 3,000 bytes on one connection, stops passing the gateway's bytes
  (``stall``) or passes them mangled (``corrupt``); ``stall@signal`` passes everything
  until the proxy gets SIGUSR1, then nothing.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

AFTER = 3000  # bytes a proxy passes faithfully on each connection


def _rest_app(ws_handler: type | None):
    import tornado.web
    import tornado.websocket

    model = {"id": "fake-kernel", "name": "python3", "execution_state": "idle", "connections": 0}

    class Api(tornado.web.RequestHandler):
        def get(self) -> None:
            self.write({"version": "fake"})

    class Kernels(tornado.web.RequestHandler):
        def get(self) -> None:
            self.write(json.dumps([model]))

        def post(self) -> None:
            self.write(model)

    class Kernel(tornado.web.RequestHandler):
        def get(self, _kid: str) -> None:
            self.write(model)

        def post(self, _kid: str, _action: str) -> None:
            self.set_status(204)

        def delete(self, _kid: str) -> None:
            self.set_status(204)

    handlers: list = [
        (r"/api", Api),
        (r"/api/kernels", Kernels),
        (r"/api/kernels/([^/]+)/(interrupt|restart)", Kernel),
    ]
    if ws_handler is not None:
        handlers.append((r"/api/kernels/([^/]+)/channels", ws_handler))
    handlers.append((r"/api/kernels/([^/]+)", Kernel))
    return tornado.web.Application(handlers)


def _ws_handlers():
    import tornado.websocket

    class Junk(tornado.websocket.WebSocketHandler):
        def on_message(self, message) -> None:
            msg = json.loads(message)
            # Valid JSON, addressed to the request, shaped like nothing in the protocol.
            self.write_message(
                json.dumps({"channel": msg.get("channel"), "parent_header": msg["header"], "header": 7, "content": []})
            )

    class Quiet(tornado.websocket.WebSocketHandler):
        def on_message(self, message) -> None:
            pass

    return {"junk-ws": Junk, "quiet-ws": Quiet}


async def _body_server(text: str) -> int:
    import tornado.web

    class Any(tornado.web.RequestHandler):
        def prepare(self) -> None:
            self.set_header("Content-Type", "application/json")
            self.finish(text)

    app = tornado.web.Application([(r"/.*", Any)])
    server = app.listen(0, "127.0.0.1")
    return next(iter(server._sockets.values())).getsockname()[1]


async def _proxy(upstream: str, mode: str, after: int, port_out: list[int]) -> asyncio.AbstractServer:
    parts = urlsplit(upstream)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80

    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, stop.set)

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, faithful: bool) -> None:
        passed = 0
        try:
            while data := await reader.read(65536):
                if not faithful and stop.is_set():
                    await asyncio.Event().wait()
                if not faithful and passed + len(data) > after:
                    keep = max(0, after - passed)
                    if mode == "stall":
                        writer.write(data[:keep])
                        await writer.drain()
                        await asyncio.Event().wait()  # hold the connection, pass nothing more
                    data = data[:keep] + bytes(b ^ 0x5A for b in data[keep:])
                passed += len(data)
                writer.write(data)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def handle(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            up_r, up_w = await asyncio.open_connection(host, port)
        except OSError:
            client_w.close()
            return
        await asyncio.gather(pipe(client_r, up_w, True), pipe(up_r, client_w, False))

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port_out.append(server.sockets[0].getsockname()[1])
    return server


async def _silent(port_out: list[int]) -> asyncio.AbstractServer:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.Event().wait()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port_out.append(server.sockets[0].getsockname()[1])
    return server


async def serve(mode: str, upstream: str | None) -> None:
    ports: list[int] = []
    keep: list = []
    if mode.startswith("body="):
        ports.append(await _body_server(mode[5:]))
    elif mode in ("junk-ws", "quiet-ws"):
        server = _rest_app(_ws_handlers()[mode]).listen(0, "127.0.0.1")
        ports.append(next(iter(server._sockets.values())).getsockname()[1])
    elif mode == "silent":
        keep.append(await _silent(ports))
    elif mode.partition("@")[0] in ("stall", "corrupt") and upstream:
        kind, _, after = mode.partition("@")
        limit = sys.maxsize if after == "signal" else int(after or AFTER)
        keep.append(await _proxy(upstream, kind, limit, ports))
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    print(ports[0], flush=True)
    await asyncio.Event().wait()


@dataclass
class FakeGateway:
    url: str
    process: subprocess.Popen


@contextmanager
def fake_gateway(mode: str, upstream: str | None = None):
    """A misbehaving gateway in a process of its own, for a with block."""
    args = [sys.executable, str(Path(__file__)), mode, *([upstream] if upstream else [])]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.strip().isdigit():
            raise RuntimeError(f"the fake gateway did not start: {line!r}")
        yield FakeGateway(f"http://127.0.0.1:{int(line)}", process)
    finally:
        process.kill()
        process.wait()


if __name__ == "__main__":
    asyncio.run(serve(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None))
