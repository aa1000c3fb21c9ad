"""What the warm server's client and server agree on: where the socket and the lock are,
the digest that says which code a server runs, and the framing (one JSON object a line).

Standard library only: the client imports this on every ``check``.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

from tutor import __version__

SOCKET_NAME = "warm.sock"
LOCK_NAME = "warm.lock"
LOG_NAME = "warm.log"
ENV_IDLE = "PTFUND_TUTOR_WARM_IDLE"  # seconds an idle server lives (default IDLE_SECONDS)
ENV_OFF = "PTFUND_TUTOR_NO_WARM"  # set to 1: every command verifies in its own process
IDLE_SECONDS = 15 * 60
MAX_LINE = 16 * 1024 * 1024  # a request carries at most 64 KiB of code; a reply, capped output
# AF_UNIX paths are at most 107 bytes on Linux (103 on macOS): a longer data dir gets no server.
MAX_SOCKET_PATH = 100


def socket_path(data: Path) -> Path:
    return data / SOCKET_NAME


def lock_path(data: Path) -> Path:
    return data / LOCK_NAME


def digest() -> str:
    """Which code a server runs: the version, the interpreter and every module of tutor (by
    size and modification time), so a server left from before an upgrade or an edit is
    replaced rather than asked."""
    h = hashlib.sha256(f"{__version__}\0{sys.executable}\0".encode())
    root = Path(__file__).resolve().parents[2]
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                st = os.stat(os.path.join(folder, name))
                h.update(f"{folder}/{name}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return h.hexdigest()[:32]


def encode(message: dict) -> bytes:
    return json.dumps(message).encode("utf-8") + b"\n"


def decode(line: bytes) -> dict:
    message = json.loads(line)
    if not isinstance(message, dict):
        raise ValueError("a message is a JSON object")
    return message
