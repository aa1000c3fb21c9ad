"""The warm server: ``python -m tutor.grading.warm.server DATA_DIR``, started by the first
client that finds none (client.py). It holds DATA_DIR/warm.lock for its whole life (one
server per data dir), answers on DATA_DIR/warm.sock, keeps a KernelPool per device (a
fork server and both kernels of a verification warm), and ends after
``$PTFUND_TUTOR_WARM_IDLE`` idle seconds or when a client of other code (an upgrade) finds
it stale.

This module is the process's entry and imports little: a cold check's request is on its
way, so the lock is taken and the fork server (which imports torch, seconds) started before
the asyncio server (serving.py) is even imported.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
from pathlib import Path

from tutor.grading.warm import protocol as p

LOCK_WAIT = 30.0  # a stale server finishing its last verification before it lets go


def _take_lock(data: Path, digest: str) -> int | None:
    """The lock's descriptor, held until exit; None when a server of this code already serves."""
    fd = os.open(p.lock_path(data), os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + LOCK_WAIT
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            from tutor.grading.warm.client import ping

            if ping(data, digest) or time.monotonic() > deadline:
                os.close(fd)
                return None
            time.sleep(0.1)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m tutor.grading.warm.server DATA_DIR", file=sys.stderr)
        return 2
    data = Path(argv[1])
    digest = p.digest()
    if _take_lock(data, digest) is None:
        return 0
    try:
        idle = float(os.environ.get(p.ENV_IDLE) or p.IDLE_SECONDS)
    except ValueError:
        idle = p.IDLE_SECONDS
    os.chdir(data)  # kernels start here, not wherever the first client happened to be
    from tutor.engine.forkclient import start_early

    start_early()  # torch imports in the fork server while the rest of this process loads
    from tutor.grading.warm.serving import serve

    serve(data, digest, idle)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
