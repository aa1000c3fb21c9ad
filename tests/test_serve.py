"""``serve``: the app in a real headless browser (Debian's chromium and chromedriver, driven
with selenium), and who may connect."""

from __future__ import annotations

import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from test_app_support import make_pack

from tutor.commands.serve import is_loopback, user_folder

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
    def __init__(self, tmp_path: Path, *args: str, env: dict | None = None):
        self.port = free_port()
        self.home = tmp_path / "home"
        self.log = tmp_path / "serve.log"
        self.pack = make_pack(tmp_path / "pack")
        self._out = open(self.log, "w")  # noqa: SIM115 (closed in stop)
        self.process = subprocess.Popen(
            [*CLI, "--data-dir", str(self.home), "--pack", str(self.pack), "serve", "--port", str(self.port), *args],
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

    def get(self, path: str, headers: dict | None = None) -> int:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status
        except urllib.error.HTTPError as exc:
            return exc.code

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


def test_user_folders_are_safe_and_distinct():
    assert user_folder("alice") == "alice"
    assert user_folder("../etc") != user_folder("__etc")
    assert "/" not in user_folder("a/b") and user_folder("a/b") != user_folder("a_b")
    assert is_loopback("127.0.0.1") and is_loopback("::1") and not is_loopback("10.0.0.1")


@pytest.mark.slow
def test_nothing_is_served_without_the_token(tmp_path: Path):
    served = Served(tmp_path)
    try:
        token = served.url.split("token=")[1]
        assert served.get("/") == 401
        assert served.get("/?token=wrong") == 401
        assert served.get(f"/?token={token}") == 200
        assert served.get("/ws") == 401
    finally:
        served.stop()


@pytest.mark.slow
def test_jupyterhub_auth_takes_the_proxys_user_and_nothing_else(tmp_path: Path):
    env = {
        "JUPYTERHUB_API_URL": f"http://127.0.0.1:{free_port()}/hub/api",
        "JUPYTERHUB_SERVICE_PREFIX": "/services/tutor/",
    }
    served = Served(tmp_path, "--auth", "jupyterhub", env=env)
    try:
        assert served.get("/services/tutor/") == 401
        assert served.get("/services/tutor/?token=not-a-hub-token") == 401  # the Hub does not know it
        assert served.get("/services/tutor/", {"X-Forwarded-User": "alice"}) == 200
    finally:
        served.stop()


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
def test_a_browser_opens_a_lesson_and_passes_an_exercise(tmp_path: Path):
    driver = _browser()
    served = None
    try:
        served = Served(tmp_path)
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
    finally:
        driver.quit()
        if served is not None:
            served.stop()
