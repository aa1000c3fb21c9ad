"""Shared bits of the engine tests: event recording, polling with deadlines, a kernel nanny."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tutor.engine.events import StreamEvent


class Recorder:
    """An on_output callback that keeps every event, in arrival order."""

    def __init__(self):
        self.events: list = []

    def __call__(self, event) -> None:
        self.events.append(event)

    def text(self) -> str:
        return "".join(e.text for e in self.events if isinstance(e, StreamEvent))


async def until(condition, timeout: float = 30.0, what: str = "condition") -> None:
    """Poll ``condition`` (sync or async) until true; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.02)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it is dead for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return True


# A stand-in for a Jupyter server: keeps an ipykernel running on one connection file and
# starts it again whenever it exits (restart requests, crashes), until the stop file appears.
NANNY = r"""
import os, subprocess, sys, time
cf, stop = sys.argv[1], sys.argv[2]
while not os.path.exists(stop):
    proc = subprocess.Popen([sys.executable, "-m", "ipykernel_launcher", "-f", cf],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    with open(cf + ".pid", "w") as f:
        f.write(str(proc.pid))
    while proc.poll() is None:
        if os.path.exists(stop) or os.getppid() == 1:
            proc.kill()
            proc.wait()
            sys.exit(0)
        time.sleep(0.05)
"""


class Nanny:
    def __init__(self, folder: Path):
        from jupyter_client.connect import write_connection_file

        self.connection_file = str(folder / "kernel.json")
        self.stop_file = folder / "stop"
        write_connection_file(self.connection_file, ip="127.0.0.1")
        self.proc = subprocess.Popen([sys.executable, "-c", NANNY, self.connection_file, str(self.stop_file)])

    def kernel_pid(self) -> int | None:
        try:
            return int(Path(self.connection_file + ".pid").read_text())
        except (OSError, ValueError):
            return None

    def close(self) -> None:
        self.stop_file.write_text("stop")
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        pid = self.kernel_pid()
        if pid and pid_alive(pid):
            os.kill(pid, signal.SIGKILL)
