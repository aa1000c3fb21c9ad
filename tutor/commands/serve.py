"""``serve``: the app in web browsers, through textual-serve (docs/serve.md).

Every browser session gets its own app process (textual-serve starts one per websocket),
run as ``ptfund-tutor --data-dir DIR`` with DIR derived from the signed-in user
(``serve_auth.py``), so learners never share progress. Kernels start as the app's do:
locally or through ``--gateway`` (the app processes inherit the environment that names
it); figures are drawn as half blocks (a browser terminal has no Kitty or Sixel graphics).
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import logging
import os
import shlex
import signal
import socket
import sys
import urllib.parse
from pathlib import Path
from typing import Any

from tutor.commands.serve_auth import (
    Hub,
    Sessions,
    check_listen,
    data_dir_for,
    is_loopback,
    listen_address,
    serve_token,
    slashed,
)
from tutor.errors import TutorError

SESSION_COOKIE = "ptfund_tutor_session"
STATE_COOKIE = "ptfund_tutor_oauth_state"
log = logging.getLogger("ptfund-tutor.serve")
_LOOKUP_ERRORS = {
    getattr(socket, name) for name in ("EAI_NONAME", "EAI_AGAIN", "EAI_FAIL", "EAI_NODATA") if hasattr(socket, name)
}


def listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound before anything is printed: a port in use is one sentence."""
    if not 0 < port < 65536:
        raise TutorError(f"--port {port} is not a port: give 1 to 65535")
    try:
        return socket.create_server((host, port), reuse_port=False)
    except OSError as exc:
        # create_server re-raises a failed name lookup as a plain OSError with getaddrinfo's errno
        if isinstance(exc, socket.gaierror) or exc.errno in _LOOKUP_ERRORS:
            raise TutorError(f"cannot listen on {host!r}: no such address on this machine (try 127.0.0.1)") from None
        if exc.errno == errno.EADDRINUSE:
            raise TutorError(f"port {port} on {host} is in use: stop what uses it, or give another --port") from None
        if exc.errno == errno.EACCES:
            raise TutorError(f"not allowed to listen on port {port} (ports below 1024 need privileges)") from None
        raise TutorError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def shown_url(host: str, port: int, public_url: str | None, prefix: str) -> str:
    if public_url:
        return public_url.rstrip("/") + prefix
    if host in ("", "0.0.0.0", "::"):
        host = socket.gethostname()  # every address: name this machine, not the wildcard
    elif ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}{prefix}"


def _server_class() -> Any:
    import aiohttp_jinja2
    from aiohttp import web
    from textual_serve.app_service import AppService
    from textual_serve.server import Server, to_int

    class TutorServer(Server):
        """textual-serve's server with a gate: each request is a user, each user a data dir."""

        def __init__(
            self,
            *,
            auth: str,
            token: str | None,
            hub: Hub | None,
            base: Path,
            app_args: list[str],
            public_url: str | None,
            **kw: Any,
        ):
            super().__init__("ptfund-tutor", title="ptfund-tutor", public_url=public_url, **kw)
            self.auth, self.token, self.hub, self.base, self.app_args = auth, token, hub, base, app_args
            self.given_url = public_url  # textual-serve's public_url is never None: it guesses one
            self.prefix = hub.prefix if hub is not None else "/"
            self.sessions = Sessions()

        async def _make_app(self) -> web.Application:
            app = await super()._make_app()
            app.middlewares.append(self._gate)
            if self.hub is not None and self.hub.callback_path.startswith(self.prefix):
                app.router.add_get("/" + self.hub.callback_path[len(self.prefix) :], self._oauth_callback)
            if self.prefix == "/":
                return app
            # A JupyterHub service sees its full path (/services/NAME/...): mount there.
            parent = web.Application()
            parent.add_subapp(self.prefix.rstrip("/"), app)
            return parent

        # ------------------------------------------------------------ who is asking

        @web.middleware
        async def _gate(self, request: web.Request, handler: Any) -> web.StreamResponse:
            if request.path.startswith(self.prefix + "static/"):
                return await handler(request)  # the page's scripts and fonts: nothing of anyone's
            if self.hub is not None and request.path == self.hub.callback_path:
                return await handler(request)  # signing in
            if request.path.startswith(self.prefix + "ws") and not self._same_origin(request):
                raise web.HTTPForbidden(text="ptfund-tutor: this page may connect only from its own address.\n")
            user = await asyncio.to_thread(self.user_of, request)
            if user is None:
                return self._sign_in(request)
            if request.query.get("token") and not request.path.startswith(self.prefix + "ws"):
                # Signed in by the URL's token: the cookie stands in for it from now on, and the
                # token leaves the address bar (and the browser's history).
                kept = [(k, v) for k, v in request.rel_url.query.items() if k != "token"]
                redirect = web.HTTPFound(request.rel_url.with_query(kept))
                self._set_cookie(redirect, SESSION_COOKIE, self.sessions.start(user))
                raise redirect
            request["tutor_user"] = user
            return await handler(request)

        def user_of(self, request: web.Request) -> str | None:
            """The signed-in user ("" for the one user of token or no auth), or None."""
            if self.auth == "none":
                return ""
            user = self.sessions.user(request.cookies.get(SESSION_COOKIE))
            if user is not None:
                return user
            given = request.query.get("token", "")
            header = request.headers.get("Authorization", "")
            if header.lower().startswith("token "):
                given = header[6:].strip()
            if not given:
                return None
            if self.hub is not None:
                return self.hub.user_for_token(given)
            return "" if self.token and _same_secret(given, self.token) else None

        def _sign_in(self, request: web.Request) -> web.StreamResponse:
            if self.hub is None or request.path.startswith(self.prefix + "ws"):
                what = "open the URL that `serve` printed" if self.hub is None else "sign in to JupyterHub first"
                raise web.HTTPUnauthorized(text=f"ptfund-tutor: not signed in: {what}.\n")
            url, state = self.hub.authorize_url()
            redirect = web.HTTPFound(url)
            self._set_cookie(redirect, STATE_COOKIE, state)
            raise redirect

        async def _oauth_callback(self, request: web.Request) -> web.StreamResponse:
            assert self.hub is not None
            code, state = request.query.get("code", ""), request.query.get("state", "")
            user = None
            if code and state:
                user = await asyncio.to_thread(self.hub.user_for_code, code, state, request.cookies.get(STATE_COOKIE))
            if user is None:
                raise web.HTTPUnauthorized(
                    text="ptfund-tutor: JupyterHub did not confirm who you are: open the tutor from the Hub again.\n"
                )
            redirect = web.HTTPFound(self.prefix)
            redirect.del_cookie(STATE_COOKIE, path=self.prefix)
            self._set_cookie(redirect, SESSION_COOKIE, self.sessions.start(user))
            raise redirect

        def _set_cookie(self, response: web.StreamResponse, name: str, value: str) -> None:
            # Lax: the browser comes back from the Hub's sign-in page with a top-level redirect.
            # The prefix: other services on the same host never receive it.
            response.set_cookie(name, value, path=self.prefix, httponly=True, samesite="Lax")

        def _same_origin(self, request: web.Request) -> bool:
            """A websocket opened by this server's own page (a cookie alone does not say so)."""
            origin = request.headers.get("Origin")
            if origin is None:
                return True  # not a browser: it proves itself like any other request
            return urllib.parse.urlsplit(origin).netloc == urllib.parse.urlsplit(self._public_base(request)).netloc

        def _public_base(self, request: web.Request) -> str:
            """The scheme and host the browser used (behind a proxy, as the proxy says)."""
            if self.given_url:
                return self.given_url
            scheme = request.headers.get("X-Forwarded-Proto", request.scheme).split(",")[0].strip()
            host = request.headers.get("X-Forwarded-Host", request.host).split(",")[0].strip()
            return f"{scheme}://{host}"

        # ------------------------------------------------------------ the app

        async def handle_index(self, request: web.Request) -> web.StreamResponse:
            """textual-serve's page, with URLs of the address the browser used."""
            base = self._public_base(request)
            router = request.app.router
            ws = f"{base}{router['websocket'].url_for()}"
            context = {
                "font_size": to_int(request.query.get("fontsize", "16"), 16),
                "app_websocket_url": ("wss:" if ws.startswith("https:") else "ws:") + ws.split(":", 1)[1],
                "config": {"static": {"url": f"{base}{router['static'].url_for(filename='/')}".rstrip("/") + "/"}},
                "application": {"name": self.title},
            }
            return aiohttp_jinja2.render_template("app_index.html", request, context)

        def command_for(self, user: str) -> str:
            argv = [sys.executable, "-m", "tutor", "--data-dir", str(data_dir_for(self.base, user)), *self.app_args]
            return shlex.join(argv)

        async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
            """textual-serve's, with the app command of this request's user."""
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
                await self._process_messages(websocket, app_service)
            except asyncio.CancelledError:
                await websocket.close()
            except Exception as error:
                log.exception(error)
            finally:
                if app_service is not None:
                    await app_service.stop()
            return websocket

        async def on_startup(self, app: web.Application) -> None:
            pass  # the URL is printed once the socket is bound (run)

        def serve_on(self, sock: socket.socket) -> None:
            """textual-serve's ``serve``, on a socket bound already."""
            self.initialize_logging()
            loop = asyncio.new_event_loop()
            try:
                loop.add_signal_handler(signal.SIGINT, self.request_exit)
                loop.add_signal_handler(signal.SIGTERM, self.request_exit)
            except NotImplementedError:
                pass
            web.run_app(self._make_app(), sock=sock, handle_signals=False, loop=loop, print=lambda *a: None)

    return TutorServer


def _same_secret(given: str, token: str) -> bool:
    import hmac

    return hmac.compare_digest(given.encode(), token.encode())


def run(args: argparse.Namespace) -> int:
    from tutor.paths import data_dir

    auth = args.auth or "token"
    if args.kernel:
        raise TutorError("serve starts kernels for every browser session: --kernel (one kernel) cannot be shared")
    hub = Hub.from_env(os.environ) if auth == "jupyterhub" else None
    host, port = listen_address(args.host, args.port, hub.service_url if hub is not None else "")
    check_listen(auth, host)
    token = serve_token(os.environ) if auth == "token" else None
    prefix = hub.prefix if hub is not None else "/"
    app_args = [arg for pack in args.pack or [] for arg in ("--pack", str(Path(pack).expanduser().resolve()))]
    if args.device:
        app_args += ["--device", args.device]
    sock = listen(host, port)
    os.environ["PTFUND_TUTOR_IMAGES"] = "blocks"  # inherited by the app processes
    server = _server_class()(
        auth=auth,
        token=token,
        hub=hub,
        base=data_dir(args.data_dir),
        app_args=app_args,
        host=host,
        port=port,
        public_url=(args.public_url or "").rstrip("/") or None,
    )
    where = shown_url(host, port, args.public_url, slashed(prefix))
    print(f"ptfund-tutor serve: open {where}" + (f"?token={token}" if token else ""), flush=True)
    if is_loopback(host):
        print("Listening on a loopback address: only this machine can connect.", flush=True)
    print("Press Ctrl+C to stop.", flush=True)
    server.serve_on(sock)
    return 0
