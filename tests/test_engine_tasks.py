"""Background work has one owner: what a session, a run or the pool starts is finished (or
waited for) before they say they are done, and a caller's cancellation is never swallowed."""

from __future__ import annotations

import asyncio

import pytest
from engine_helpers import pid_alive

from tutor.engine import KernelPool, KernelSession
from tutor.engine.events import StreamEvent

pytestmark = pytest.mark.slow  # each starts a kernel


async def test_async_output_callbacks_finish_before_execute_returns():
    session = KernelSession()
    seen: list[str] = []

    async def slow_sink(event):
        await asyncio.sleep(0.2)
        if isinstance(event, StreamEvent):
            seen.append(event.text)

    try:
        await session.start()
        r = await session.execute("print('hello')", on_output=slow_sink)
        assert r.ok and seen == ["hello\n"]
    finally:
        await session.shutdown()


async def test_async_state_callbacks_finish_before_shutdown_returns():
    session = KernelSession()
    states: list[str] = []

    async def slow_listener(event):
        await asyncio.sleep(0.2)
        states.append(event.state)

    session.on_state = slow_listener
    await session.start()
    await session.shutdown()
    assert states[-1] == "stopped" and "ready" in states


async def test_shutdown_lets_the_callers_cancellation_through():
    session = KernelSession()
    session.start_soon()
    await asyncio.sleep(0.05)  # the start is under way
    stopping = asyncio.ensure_future(session.shutdown())
    await asyncio.sleep(0)  # shutdown now waits for the cancelled start to unwind
    stopping.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stopping
    await session.shutdown()  # and a later shutdown still finishes the job
    assert session.state == "stopped"


async def test_pool_shutdown_waits_for_kernels_handed_back():
    pool = KernelPool(size=1)
    try:
        await pool.start()
        kernel = await pool.take()
        pid = kernel.report["pid"]
        pool.give_back(kernel)  # stops in the background
    finally:
        await pool.shutdown()
    assert not pid_alive(pid) and kernel.state == "stopped"
