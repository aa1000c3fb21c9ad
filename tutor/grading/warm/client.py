"""Asking the warm server (server.py) for a verdict, starting it when none answers.

Standard library only, and no torch: ``check`` imports this before anything else. Every
function returns None where no server can help (no AF_UNIX, a data dir whose socket path
is too long, a server that cannot start or that went away): the caller then verifies in
its own process, as before there was a server.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from tutor.errors import TutorError
from tutor.grading.warm import protocol as p

if TYPE_CHECKING:
    from tutor.grading.predict import PredictOutcome
    from tutor.grading.verdict import Verdict

START_TIMEOUT = 30.0  # the server answers pings before it has imported anything heavy
CONNECT_POLL = 0.02


def _usable(data: Path) -> bool:
    if os.environ.get(p.ENV_OFF) or not hasattr(socket, "AF_UNIX"):
        return False
    return len(os.fsencode(p.socket_path(data))) <= p.MAX_SOCKET_PATH


def _ask(data: Path, request: dict, timeout: float | None = None) -> dict | None:
    """One request, one reply; None if nothing listens or the server hung up without one."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        try:
            sock.connect(str(p.socket_path(data)))
        except OSError:  # no server: nothing listens, or a socket left by one that was killed
            return None
        sock.sendall(p.encode(request))
        chunks = []
        while True:
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
            if chunk.endswith(b"\n"):
                break
        line = b"".join(chunks)
        return p.decode(line) if line.endswith(b"\n") else None
    except (OSError, ValueError):
        return None
    finally:
        sock.close()


def ping(data: Path, digest: str) -> bool:
    """Whether a server of this code answers for ``data``."""
    reply = _ask(data, {"op": "ping", "digest": digest}, timeout=5.0)
    return bool(reply and reply.get("digest") == digest and not reply.get("stale"))


_early: dict[Path, subprocess.Popen] = {}  # servers start_early() started, by data dir


def _spawn(data: Path) -> subprocess.Popen | None:
    try:
        data.mkdir(parents=True, exist_ok=True)
        log = open(data / p.LOG_NAME, "ab")  # noqa: SIM115 - the server's stderr, for its whole life
    except OSError:
        return None
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "tutor.grading.warm.server", str(data)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,  # not the terminal's: ctrl+c in the shell does not reach it
        )
    except OSError:
        return None
    finally:
        log.close()


def _listening(data: Path) -> bool:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(p.socket_path(data)))
        return True
    except OSError:
        return False
    finally:
        sock.close()


def start_early(data: Path) -> None:
    """Start the server for ``data`` now, without waiting for it, when nothing listens yet:
    a cold check's server imports torch for seconds, so it starts before the command has
    even parsed its arguments. The request later finds it (start_server waits for it)."""
    if data.resolve() in _early or not _usable(data) or _listening(data):
        return
    proc = _spawn(data)
    if proc is not None:
        _early[data.resolve()] = proc


def start_server(data: Path, digest: str) -> bool:
    """Start a server for ``data`` in the background (or find one another client started);
    True once one of this code answers."""
    proc = _early.pop(data.resolve(), None)  # already on its way (start_early)
    if proc is None or proc.poll() is not None:
        proc = _spawn(data)
    if proc is None:
        return False
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if ping(data, digest):
            return True
        if proc.poll() is not None:
            return ping(data, digest)  # it found a server of this code already serving, or failed
        time.sleep(CONNECT_POLL)
    return False


def request(data: Path, message: dict) -> dict | None:
    """The server's reply to ``message`` (a server is started when none answers, and one of
    other code is replaced); None when the caller must do the work itself."""
    if not _usable(data):
        return None
    digest = p.digest()
    message = {**message, "digest": digest}
    for _ in range(3):
        reply = _ask(data, message)
        if reply is not None and not reply.get("stale"):
            return reply
        if reply is None and p.socket_path(data).exists() and _ask(data, {"op": "ping", "digest": digest}, 5.0):
            return None  # a server answers but dropped this request (it crashed on it): do it here
        if not start_server(data, digest):
            return None
    return None


def stop_server(data: Path) -> bool:
    """Ask the server for ``data`` to stop (benchmarks, tests); True if one was asked."""
    if not _usable(data):
        return False
    reply = _ask(data, {"op": "quit", "digest": p.digest()}, timeout=5.0)
    if reply is None:
        return False
    if reply.get("stale"):
        return True  # a server of other code stops when it is found stale
    deadline = time.monotonic() + 30
    with contextlib.suppress(OSError):
        fd = os.open(p.lock_path(data), os.O_RDWR)
        try:
            import fcntl

            while time.monotonic() < deadline:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the server let go: it has exited
                    fcntl.flock(fd, fcntl.LOCK_UN)
                    break
                except BlockingIOError:
                    time.sleep(0.05)
        finally:
            os.close(fd)
    return True


def verdict_request(
    target: str, code: str, *, packs: list[str], device: str | None = None, timeout: float | None = None
) -> dict:
    """The request for a verdict on ``code`` as the exercise ``target`` (pack dirs absolute)."""
    return {"op": "verify", "target": target, "code": code, "packs": packs, "device": device, "timeout": timeout}


def verdict_reply(data: Path, message: dict) -> tuple[str, str, Verdict, str | None] | None:
    """(exercise, pack, verdict, warning) from the server; None where the caller verifies
    itself (no server, or a pack to trust first: the caller asks the learner). An error the
    learner can fix (no such exercise, a broken pack) is raised as the TutorError it was."""
    reply = request(data, message)
    if reply is None or reply.get("needs_trust"):
        return None
    if "error" in reply:
        raise TutorError(str(reply["error"]), int(reply.get("exit_code") or 2))
    from tutor.grading.verdict import CheckLine, Verdict  # here: a cold check's server starts sooner

    try:
        data_ = dict(reply["verdict"])
        data_.pop("passed", None)
        checks = [CheckLine(**c) for c in data_.pop("checks", [])]
        verdict = Verdict(**data_, checks=checks)
        return str(reply["exercise"]), str(reply["pack"]), verdict, reply.get("warning")
    except (KeyError, TypeError, ValueError):
        return None  # a server of a shape we do not know: do it here


def predict_reply(data: Path, code: str, device: str | None = None) -> PredictOutcome | None:
    """A predict card's outcome from a fresh kernel of the server; None where the caller
    runs the code itself."""
    from tutor.grading.predict import PredictOutcome

    reply = request(data, {"op": "predict", "code": code, "device": device})
    try:
        return PredictOutcome(**reply["predict"]) if reply and "predict" in reply else None
    except TypeError:
        return None  # a server of a shape we do not know
