"""The wire to a kernel reads its channels from the event loop's watch of their descriptors,
and where the loop watches none (Windows' proactor loop) through pyzmq's own poll: every
message arrives either way. Real kernels."""

from __future__ import annotations

import asyncio

import pytest

from tutor.engine import KernelSession
from tutor.engine.connection import Connection

pytestmark = pytest.mark.slow


async def _conversation() -> tuple[str, str | None, int]:
    """A run that prints, asks for input and ends: (its output, what the prompt said, how
    many channels the loop watched)."""
    session = KernelSession(recover=False)
    asked: list[str] = []

    def answer(prompt: str) -> str:
        asked.append(prompt)
        return "42"

    try:
        await session.start()
        assert session._conn is not None
        watched = len(session._conn._fds)
        result = await session.execute("print('before')\nprint('got', input('number? '))\n", stdin=answer, timeout=60)
    finally:
        await session.shutdown()
    return result.output, asked[0] if asked else None, watched


def test_every_message_arrives_through_the_loops_watch():
    output, asked, watched = asyncio.run(_conversation())
    assert watched == 4  # shell, iopub, stdin, control
    assert "before" in output and "got 42" in output
    assert asked == "number? "


def test_every_message_arrives_where_the_loop_cannot_watch_a_descriptor(monkeypatch):
    add_reader = asyncio.SelectorEventLoop.add_reader

    def refused(self, fd, callback, *args):
        # The watch the connection asks for is refused, as a proactor loop refuses it; pyzmq's
        # own (on Windows, its selector thread's) still works.
        if getattr(callback, "__func__", None) is Connection._readable:
            raise NotImplementedError
        return add_reader(self, fd, callback, *args)

    monkeypatch.setattr(asyncio.SelectorEventLoop, "add_reader", refused)
    output, asked, watched = asyncio.run(_conversation())
    assert watched == 0
    assert "before" in output and "got 42" in output
    assert asked == "number? "
