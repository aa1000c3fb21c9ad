"""``serve``: the app in web browsers, through textual-serve (docs/serve.md).

Every browser session gets its own app process (textual-serve starts one per websocket),
run as ``ptfund-tutor --data-dir DIR`` with DIR derived from the authenticated user, so
learners never share progress. Who the user is, is decided per request:

- ``token`` (default): a random token, printed in the URL to open; the browser keeps it in
  a cookie. One user: the person who started ``serve`` (the usual data dir).
- ``jupyterhub``: run as a JupyterHub service. A request is the user JupyterHub says owns
  its API token (``Authorization: token ...`` or ``?token=...``, checked with the Hub's
  REST API at $JUPYTERHUB_API_URL), or the user an authenticating proxy on this machine
  names in ``X-Forwarded-User`` (honoured only from the loopback address).

Nothing is served unauthenticated, on any address. Kernels start as the app's do: locally
or through ``--gateway``; figures are drawn as half blocks (a browser terminal has no
Kitty or Sixel graphics).
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import ipaddress
import json
import logging
import os
import re
import secrets
import shlex
import sys
import urllib.request
from pathlib import Path
from typing import Any

from tutor.errors import TutorError

COOKIE = "ptfund_tutor_session"
FORWARDED_USER = "X-Forwarded-User"
_USER_CHARS = re.compile(r"[^A-Za-z0-9._-]")
log = logging.getLogger("ptfund-tutor.serve")


def user_folder(user: str) -> str:
    """A folder name for a user name: readable, and distinct for distinct names."""
    safe = _USER_CHARS.sub("_", user)[:64].strip(".") or "_"
    if safe != user:
        import hashlib

        safe += "-" + hashlib.sha256(user.encode()).hexdigest()[:8]
    return safe


def is_loopback(host: str | None) -> bool:
    if host is None:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


class HubUsers:
    """JupyterHub service auth: the user who owns an API token, asked of the Hub."""

    def __init__(self, api_url: str):
        self.api_url = api_url.rstrip("/")
        self._cache: dict[str, str | None] = {}

    def user_for_token(self, token: str) -> str | None:
        if token in self._cache:
            return self._cache[token]
        request = urllib.request.Request(
            f"{self.api_url}/user", headers={"Authorization": f"token {token}", "Accept": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                name = json.load(response).get("name")
        except (OSError, ValueError, AttributeError):
            name = None
        user = name if isinstance(name, str) and name else None
        self._cache[token] = user
        return user


def _server_class() -> Any:
    from aiohttp import web
    from textual_serve.app_service import AppService
    from textual_serve.server import Server

    class TutorServer(Server):
        """textual-serve's server with a gate: each request is a user, each user a data dir."""

        def __init__(
            self,
            *,
            auth: str,
            token: str | None,
            hub: HubUsers | None,
            base: Path,
            app_args: list[str],
            prefix: str = "/",
            **kw: Any,
        ):
            super().__init__("ptfund-tutor", title="ptfund-tutor", **kw)
            self.auth, self.token, self.hub, self.base, self.app_args = auth, token, hub, base, app_args
            self.prefix = "/" + prefix.strip("/") + "/" if prefix.strip("/") else "/"

        async def _make_app(self) -> web.Application:
            app = await super()._make_app()
            app.middlewares.append(self._gate)
            if self.prefix == "/":
                return app
            # Behind JupyterHub a service sees its full path (/services/NAME/...): mount there.
            parent = web.Application()
            parent.add_subapp(self.prefix.rstrip("/"), app)
            return parent

        @web.middleware
        async def _gate(self, request: web.Request, handler: Any) -> web.StreamResponse:
            if request.path.startswith(self.prefix + "static/"):
                return await handler(request)  # the page's scripts and fonts: nothing of anyone's
            user = await asyncio.to_thread(self.user_of, request)
            if user is None:
                raise web.HTTPUnauthorized(text="ptfund-tutor: not signed in: open the URL that `serve` printed.\n")
            request["tutor_user"] = user
            response = await handler(request)
            given = request.query.get("token")
            if given and isinstance(response, web.Response):
                # Later requests (the websocket) carry the cookie instead of the query.
                response.set_cookie(COOKIE, given, httponly=True, samesite="Strict")
            return response

        def user_of(self, request: web.Request) -> str | None:
            """The authenticated user ("" for the one user of token auth), or None."""
            given = request.query.get("token") or request.cookies.get(COOKIE) or ""
            header = request.headers.get("Authorization", "")
            if header.lower().startswith("token "):
                given = header[6:].strip()
            if self.auth == "token":
                return "" if self.token and given and hmac.compare_digest(given, self.token) else None
            forwarded = request.headers.get(FORWARDED_USER)
            if forwarded and is_loopback(request.remote):
                return forwarded
            if given and self.hub is not None:
                return self.hub.user_for_token(given)
            return None

        def command_for(self, user: str) -> str:
            data = self.base if user == "" else self.base / "users" / user_folder(user)
            argv = [sys.executable, "-m", "tutor", "--data-dir", str(data), *self.app_args]
            return shlex.join(argv)

        async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
            """textual-serve's, with the app command of this request's user."""
            from textual_serve.server import to_int

            websocket = web.WebSocketResponse(heartbeat=15)
            width = to_int(request.query.get("width", "80"), 80)
            height = to_int(request.query.get("height", "24"), 24)
            app_service: AppService | None = None
            try:
                await websocket.prepare(request)

                async def close() -> None:
                    await websocket.close()

                app_service = AppService(
                    self.command_for(request["tutor_user"]),
                    write_bytes=websocket.send_bytes,
                    write_str=websocket.send_str,
                    close=close,
                    download_manager=self.download_manager,
                    debug=self.debug,
                )
                await app_service.start(width, height)
                try:
                    await self._process_messages(websocket, app_service)
                finally:
                    await app_service.stop()
            except asyncio.CancelledError:
                await websocket.close()
            except Exception as error:
                log.exception(error)
            finally:
                if app_service is not None:
                    await app_service.stop()
            return websocket

        async def on_startup(self, app: web.Application) -> None:
            where = f"{self.public_url}{self.prefix}" + (f"?token={self.token}" if self.token else "")
            print(f"ptfund-tutor serve: open {where}", flush=True)
            print("Press Ctrl+C to stop.", flush=True)

    return TutorServer


def run(args: argparse.Namespace) -> int:
    from tutor.paths import data_dir

    auth = args.auth or "token"
    hub = None
    if auth == "jupyterhub":
        api_url = os.environ.get("JUPYTERHUB_API_URL")
        if api_url:
            hub = HubUsers(api_url)
        elif not is_loopback(args.host):
            raise TutorError(
                "--auth jupyterhub outside JupyterHub ($JUPYTERHUB_API_URL unset) trusts only a proxy on this "
                "machine: listen on 127.0.0.1"
            )
    if not 0 < args.port < 65536:
        raise TutorError(f"--port {args.port} is not a port: give 1 to 65535")
    token = secrets.token_urlsafe(24) if auth == "token" else None
    app_args = [arg for pack in args.pack or [] for arg in ("--pack", str(Path(pack).expanduser().resolve()))]
    if args.device:
        app_args += ["--device", args.device]
    # The app processes inherit this process's environment: the gateway (if any) and half blocks.
    os.environ["PTFUND_TUTOR_IMAGES"] = "blocks"
    server = _server_class()(
        auth=auth,
        token=token,
        hub=hub,
        base=data_dir(args.data_dir),
        app_args=app_args,
        host=args.host,
        port=args.port,
        public_url=(args.public_url or "").rstrip("/") or None,
        prefix=os.environ.get("JUPYTERHUB_SERVICE_PREFIX", "/") if auth == "jupyterhub" else "/",
    )
    try:
        server.serve()
    except OSError as exc:
        raise TutorError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    return 0
