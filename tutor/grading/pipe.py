"""The host's part of the pipe between a verification's two kernels (tutor/checks/pipe.py).

Each kernel listens on 127.0.0.1; the host connects to both, shows each the token it gave
that kernel, and copies bytes between the two connections, one thread per direction. It
never reads what it copies: requests and answers are the kernels' business, as when they
crossed as prompts. The threads block in the socket calls (no event loop wakes up per
frame), which is what makes a question cost a fraction of a millisecond instead of four
jupyter messages.
"""

from __future__ import annotations

import contextlib
import socket
import threading

CONNECT_WAIT = 5.0  # seconds to connect to a kernel's end (it listens already: loopback is instant)
_CHUNK = 1 << 20


class Pipe:
    """Two connected ends and the threads copying between them; ``close`` ends it all."""

    def __init__(self, learner: socket.socket, judge: socket.socket):
        self._socks = (learner, judge)
        self._threads = [
            threading.Thread(target=_copy, args=(learner, judge), name="pipe learner->judge", daemon=True),
            threading.Thread(target=_copy, args=(judge, learner), name="pipe judge->learner", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def close(self) -> None:
        """Cut both connections: each kernel's end then reads the end of the pipe."""
        for sock in self._socks:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for thread in self._threads:
            thread.join(timeout=1.0)
        for sock in self._socks:
            sock.close()


def connect_end(port: int, token: str) -> socket.socket:
    """A connection to a kernel's end on ``port``, the token shown (OSError if it cannot be made)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=CONNECT_WAIT)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.sendall(token.encode())
        sock.settimeout(None)
    except OSError:
        sock.close()
        raise
    return sock


def _copy(source: socket.socket, target: socket.socket) -> None:
    try:
        while True:
            data = source.recv(_CHUNK)
            if not data:
                break
            target.sendall(data)
    except OSError:
        pass
    finally:
        # The other kernel reads the end of the pipe once everything sent before it.
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_WR)
