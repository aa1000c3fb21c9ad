"""``serve``: the app in a real headless browser (Debian's chromium and chromedriver, driven
with selenium), and who may connect."""

from __future__ import annotations

import asyncio
import http.cookiejar
import http.server
import json
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from test_app_support import make_pack

CLI = [sys.executable, "-m", "tutor"]
SOLUTION_LINE = "import torch; t = torch.zeros(2, 3, dtype=torch.float64, device=DEVICE)"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.2)


class Served:
    def __init__(
        self, tmp_path: Path, *args: str, env: dict | None = None, port: int | None = None, options: tuple = ()
    ):
        """``port``: where serve listens without being told (--port is given otherwise);
        ``options``: global options, given before ``serve``."""
        self.port = port or free_port()
        if port is None:
            args = ("--port", str(self.port), *args)
        self.home = tmp_path / "home"
        self.log = tmp_path / "serve.log"
        self.pack = make_pack(tmp_path / "pack")
        self._out = open(self.log, "w")  # noqa: SIM115 (closed in stop)
        self.process = subprocess.Popen(
            [*CLI, "--data-dir", str(self.home), "--pack", str(self.pack), *options, "serve", *args],
            stdout=self._out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
            start_new_session=True,
        )
        self.url = wait_until(self._printed_url, 60, "serve to print its URL")

    def _printed_url(self) -> str | None:
        assert self.process.poll() is None, self.log.read_text()
        found = re.search(r"open (http://\S+)", self.log.read_text())
        return found.group(1) if found else None

    def get(self, path: str, headers: dict | None = None, opener=None) -> tuple[int, str]:
        """The status and the final URL (or where a redirect not followed points)."""
        return self.fetch(path, headers, opener)[:2]

    def fetch(self, path: str, headers: dict | None = None, opener=None) -> tuple[int, str, str]:
        """The status, the final URL (or where a redirect not followed points) and the body."""
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", headers=headers or {})
        try:
            with (opener or urllib.request.build_opener()).open(request, timeout=30) as response:
                return response.status, response.geturl(), response.read().decode()
        except urllib.error.HTTPError as exc:
            body = exc.read().decode()
            assert "Traceback" not in body
            return exc.code, exc.headers.get("Location") or exc.geturl(), body

    def stop(self) -> None:
        import signal

        try:
            os.killpg(self.process.pid, signal.SIGTERM)  # the server and the app processes it started
        except ProcessLookupError:
            pass
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
        self._out.close()


def browser_like():
    """An HTTP client that keeps cookies and follows redirects."""
    return urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))


@pytest.mark.slow
def test_nothing_is_served_without_the_token(tmp_path: Path):
    served = Served(tmp_path)
    try:
        token = served.url.split("token=")[1]
        assert served.get("/")[0] == 401
        assert served.get("/?token=wrong")[0] == 401
        assert served.get("/ws")[0] == 401
        assert "open the URL that `serve` printed" in served.fetch("/")[2]
        browser = browser_like()
        # The token is exchanged for a session cookie and leaves the address bar.
        assert served.get(f"/?token={token}&fontsize=14", opener=browser) == (
            200,
            served.url.split("?")[0] + "?fontsize=14",
        )
        assert served.get("/", opener=browser)[0] == 200
        assert served.get("/", {"Cookie": "ptfund_tutor_session=forged"})[0] == 401
        # The page's websocket is at the address the browser used (a proxy's, when it says so).
        page = served.fetch("/", {"Host": "tutor.example:443", "X-Forwarded-Proto": "https"}, opener=browser)[2]
        assert "wss://tutor.example:443/ws" in page
        # Another site's page cannot open a session with the learner's cookie.
        assert served.get("/ws", {"Origin": "http://elsewhere.example"}, opener=browser)[0] == 403
    finally:
        served.stop()


class FakeHub(http.server.ThreadingHTTPServer):
    """JupyterHub's OAuth and user API as a service sees them (jupyterhub itself needs a
    database and a Node proxy): alice signs in; codes are used once."""

    client_id, secret = "service-tutor", "service-secret"

    def __init__(self, callback: str):
        self.callback = callback
        self.codes: dict[str, str] = {}
        self.tokens = {"alices-api-token": "alice", "bobs-api-token": "bob"}
        self.scopes = {"alice": ["access:services!service=tutor"], "bob": ["read:users"]}  # bob may not
        super().__init__(("127.0.0.1", 0), _HubHandler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _HubHandler(http.server.BaseHTTPRequestHandler):
    server: FakeHub

    def log_message(self, *args) -> None:
        pass

    def _answer(self, status: int, body: dict | None = None, location: str | None = None) -> None:
        self.send_response(status)
        if location:
            self.send_header("Location", location)
        data = json.dumps(body or {}).encode()
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        hub = self.server
        if url.path == "/hub/api/oauth2/authorize":
            if query.get("client_id") != hub.client_id or query.get("redirect_uri") != hub.callback:
                return self._answer(400)
            code = f"code-{len(hub.codes)}"
            hub.codes[code] = "alice"
            return self._answer(302, location=f"{hub.callback}?code={code}&state={query['state']}")
        if url.path == "/hub/api/user":
            user = hub.tokens.get(self.headers.get("Authorization", "").removeprefix("token "))
            return self._answer(200, {"name": user, "scopes": hub.scopes[user]}) if user else self._answer(403)
        self._answer(404)

    def do_POST(self) -> None:
        hub = self.server
        form = dict(urllib.parse.parse_qsl(self.rfile.read(int(self.headers["Content-Length"])).decode()))
        user = hub.codes.pop(form.get("code", ""), None)
        if (form.get("client_id"), form.get("client_secret")) != (hub.client_id, hub.secret) or user is None:
            return self._answer(403)
        token = f"oauth-token-{user}"
        hub.tokens[token] = user
        self._answer(200, {"access_token": token, "token_type": "Bearer"})


@pytest.mark.slow
def test_behind_jupyterhub_each_signed_in_user_gets_their_own_data_dir(tmp_path: Path):
    port = free_port()
    prefix = "/services/tutor/"
    hub = FakeHub(callback=f"http://127.0.0.1:{port}{prefix}oauth_callback")
    env = {
        "JUPYTERHUB_API_URL": f"{hub.url}/hub/api",
        "JUPYTERHUB_CLIENT_ID": hub.client_id,
        "JUPYTERHUB_API_TOKEN": hub.secret,
        "JUPYTERHUB_HOST": hub.url,
        "JUPYTERHUB_SERVICE_PREFIX": prefix,
        "JUPYTERHUB_OAUTH_CALLBACK_URL": hub.callback,
        "JUPYTERHUB_SERVICE_URL": f"http://127.0.0.1:{port}",
        "JUPYTERHUB_OAUTH_ACCESS_SCOPES": '["access:services!service=tutor", "access:services"]',
    }
    served = Served(tmp_path, "--auth", "jupyterhub", env=env, port=port)
    try:
        assert served.url == f"http://127.0.0.1:{port}{prefix}"  # the port came from the Hub's service URL
        # A browser is sent to sign in at the Hub and comes back signed in.
        browser = browser_like()
        assert served.get(prefix, opener=browser) == (200, served.url)
        assert f"ws://127.0.0.1:{port}{prefix}ws" in served.fetch(prefix, opener=browser)[2]
        # Without the session: sent to the Hub again; a forged callback or an unknown token is refused.
        no_redirect = urllib.request.build_opener(NoRedirect)
        status, where = served.get(prefix, opener=no_redirect)
        assert status == 302 and where.startswith(f"{hub.url}/hub/api/oauth2/authorize?")
        assert served.get(f"{prefix}oauth_callback?code=code-0&state=forged")[0] == 401
        assert served.get(f"{prefix}?token=not-a-hub-token", opener=no_redirect)[0] == 302
        assert served.get(f"{prefix}ws", {"Authorization": "token not-a-hub-token"})[0] == 401
        assert served.get(prefix, {"Authorization": "token alices-api-token"})[0] == 200
        assert served.get(f"{prefix}ws", {"Authorization": "token bobs-api-token"})[0] == 401  # no access scope
        # The app this user's websocket starts keeps its progress under users/alice.
        asyncio.run(open_app(f"ws://127.0.0.1:{port}{prefix}ws", {"Authorization": "token alices-api-token"}, served))
    finally:
        served.stop()
        hub.shutdown()


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


async def open_app(url: str, headers: dict, served: Served) -> None:
    import aiohttp

    alice = served.home / "users" / "alice"
    async with aiohttp.ClientSession() as session, session.ws_connect(url, headers=headers) as ws:
        await ws.send_json(["resize", {"width": 100, "height": 30}])
        deadline = time.monotonic() + 120
        while not (alice / "progress.sqlite3").exists():
            assert time.monotonic() < deadline, f"no app wrote progress under {alice}: {served.log.read_text()}"
            try:
                await ws.receive(timeout=0.5)  # the app's screen: read and dropped
            except asyncio.TimeoutError:
                pass
        env = app_environment(str(alice))
    assert not (served.home / "progress.sqlite3").exists()  # nothing in the base data dir
    # Learner code runs under this environment: without the Hub's secret; figures in half blocks.
    assert env.get("PTFUND_TUTOR_IMAGES") == "blocks" and "JUPYTERHUB_API_TOKEN" not in env


def app_environment(data_dir: str) -> dict[str, str]:
    """The environment of the app process that runs with ``data_dir`` (Linux's /proc)."""
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            if data_dir.encode() in argv and b"tutor" in argv:
                pairs = (proc / "environ").read_bytes().split(b"\0")
                return dict(p.decode().split("=", 1) for p in pairs if b"=" in p)
        except OSError:
            continue
    raise AssertionError(f"no app process runs with {data_dir}")


def _browser():
    driver_path = shutil.which("chromedriver")
    browser_path = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if driver_path is None or browser_path is None:
        pytest.skip("no Chromium and chromedriver here (.ci/run installs Debian's chromium and chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = browser_path
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(driver_path), options=options)


def query(home: Path, sql: str) -> list[tuple]:
    """Rows from the served learner's progress (read-only; [] until the app made it).

    The browser draws the terminal on a canvas, so the test watches what the app records.
    """
    db = home / "progress.sqlite3"
    if not db.is_file():
        return []
    try:
        conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=5)
        try:
            return conn.execute(sql).fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        return []


@pytest.mark.slow
@pytest.mark.parametrize("kernels", ["local", "gateway"])
def test_a_browser_opens_a_lesson_and_passes_an_exercise(tmp_path: Path, kernels: str):
    driver = _browser()
    served = gateway = None
    try:
        options: tuple = ()
        if kernels == "gateway":
            from gateway_server import start_gateway

            gateway = start_gateway(tmp_path / "gateway.log")
            options = ("--gateway", gateway.url)
        served = Served(tmp_path, options=options, env={"PTFUND_TUTOR_GATEWAY_TOKEN": gateway.token} if gateway else {})
        from test_app_support import trust

        trust(served.pack, served.home)
        from tutor.progress import ProgressStore

        with ProgressStore.open(served.home) as store:
            store.set_position("apptest", "basics", "zeros")
        from selenium.webdriver.common.action_chains import ActionChains
        from selenium.webdriver.common.keys import Keys

        driver.get(served.url)
        wait_until(lambda: driver.find_elements("css selector", ".xterm-helper-textarea"), 60, "the terminal")
        # Keys go to the terminal's input (xterm.js reads a hidden textarea).
        driver.execute_script("document.querySelector('.xterm-helper-textarea').focus()")
        keys = ActionChains(driver)

        def press_until(what: str, condition, *key_strokes: str, timeout: float = 180) -> None:
            """Press the keys again until the app records the effect: until the app in the
            browser is up and the editor takes input, keys are dropped (the terminal is drawn
            on a canvas, so the test watches what the app records)."""
            deadline = time.monotonic() + timeout
            while not condition():
                assert time.monotonic() < deadline, f"timed out after {timeout:g} s waiting for {what}"
                keys.send_keys(*key_strokes).perform()
                end = time.monotonic() + 5
                while not condition() and time.monotonic() < end:
                    time.sleep(0.2)

        # The learner was last at the test pack's first exercise: `c` on home continues there.
        opened = "SELECT 1 FROM quiz_lessons WHERE pack = 'apptest' AND lesson = 'basics'"
        press_until("the lesson to open", lambda: query(served.home, opened), "c")
        # f7 selects the whole editor and typing replaces it; the app saves the draft as it goes.
        draft = "SELECT code FROM drafts WHERE pack = 'apptest' AND item = 'basics/zeros'"
        press_until("the typed draft", lambda: query(served.home, draft) == [(SOLUTION_LINE,)], Keys.F7, SOLUTION_LINE)
        keys.key_down(Keys.CONTROL).send_keys("t").key_up(Keys.CONTROL).perform()
        attempts = "SELECT passed FROM attempts WHERE pack = 'apptest' AND item = 'basics/zeros'"
        results = wait_until(lambda: query(served.home, attempts), 180, "the check's verdict")
        if results != [(1,)]:
            driver.save_screenshot(str(tmp_path / "browser.png"))
        assert results == [(1,)], f"the check did not pass (see {tmp_path / 'browser.png'})"
        if gateway is not None:
            assert gateway.kernels(), "the app's kernels did not run on the gateway"
    finally:
        driver.quit()
        if served is not None:
            served.stop()
        if gateway is not None:
            from gateway_server import stop_gateway

            stop_gateway(gateway)
