"""Gateways that misbehave (tests/fake_gateway.py): each gives one sentence naming the gateway
and what it sent, within seconds, never a traceback or a 300 s wait."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys

import pytest
from fake_gateway import fake_gateway
from gateway_server import start_gateway, stop_gateway

from tutor.engine import KernelSession
from tutor.engine.errors import EngineError
from tutor.engine.gateway import GatewayClient, GatewayConnection

pytestmark = pytest.mark.slow  # each starts a process (a fake gateway, a real one, the CLI)

# Far above what each fault takes to be told (seconds), far below the 300 s of before.
BOUND = 120


async def start_error(url: str) -> str:
    session = KernelSession(gateway=url)
    try:
        with pytest.raises(EngineError) as err:
            await asyncio.wait_for(session.start(), BOUND)
    finally:
        await session.shutdown()
    return str(err.value)


@pytest.mark.parametrize("body", ["hello", "[1, 2]"])
def test_a_body_that_is_not_a_kernel_is_one_sentence(body, tmp_path):
    with fake_gateway(f"body={body}") as fake:
        url = fake.url
        message = asyncio.run(start_error(url))
        assert message.startswith(f"The gateway at {url} ")
        assert repr(body) in message
        env = {**os.environ, "PTFUND_TUTOR_HOME": str(tmp_path / "h")}
        empty = tmp_path / "empty.py"  # a regular file: `check` refuses to read a device
        empty.write_text("")
        r = subprocess.run(
            [sys.executable, "-m", "tutor", "--gateway", url, "check", "tensors/features-and-labels", "--file", str(empty)],
            capture_output=True, text=True, env=env, timeout=BOUND,
        )  # fmt: skip
    assert r.returncode != 0 and "Traceback" not in r.stdout + r.stderr
    assert f"The gateway at {url}" in r.stdout + r.stderr


def test_a_websocket_answering_junk_is_told_what_it_sent():
    with fake_gateway("junk-ws") as fake:
        url = fake.url
        message = asyncio.run(start_error(url))
    assert message.startswith(f"The gateway at {url} sent ")
    assert "which is not a kernel message" in message and "while the kernel was starting" in message


def test_a_websocket_that_never_answers_is_a_stall():
    with fake_gateway("quiet-ws") as fake:
        url = fake.url
        message = asyncio.run(start_error(url))
    assert message.startswith(f"The gateway at {url} stopped passing the kernel's messages")


def test_a_server_that_accepts_and_never_answers():
    with fake_gateway("silent") as fake:
        url = fake.url
        message = asyncio.run(start_error(url))
    assert message == f"The gateway at {url} accepted the connection but did not answer GET /api within 10 s."


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    gw = start_gateway(tmp_path_factory.mktemp("gateway") / "gateway.log")
    old = os.environ.get("PTFUND_TUTOR_GATEWAY_TOKEN")
    os.environ["PTFUND_TUTOR_GATEWAY_TOKEN"] = gw.token
    yield gw
    if old is None:
        os.environ.pop("PTFUND_TUTOR_GATEWAY_TOKEN", None)
    else:
        os.environ["PTFUND_TUTOR_GATEWAY_TOKEN"] = old
    stop_gateway(gw)


@pytest.mark.parametrize("mode", ["stall", "corrupt"])
def test_replies_that_stall_or_are_corrupted_after_3000_bytes(mode, gateway):
    with fake_gateway(mode, gateway.url) as fake:
        url = fake.url
        message = asyncio.run(start_error(url))
    assert message.startswith(f"The gateway at {url} ")
    assert "exited" not in message and "while the kernel was starting" in message
    if mode == "stall":
        assert "stopped passing the kernel's messages" in message
    else:
        assert "corrupted" in message or "not a kernel message" in message


def test_a_gateway_that_stalls_mid_run_is_told_within_the_time_limit(gateway):
    async def main(fake) -> tuple:
        session = KernelSession(gateway=fake.url, recover=False)
        try:
            await session.start()
            run = asyncio.ensure_future(session.execute("import time\ntime.sleep(30)", timeout=20))
            await asyncio.sleep(1)
            fake.process.send_signal(signal.SIGUSR1)  # the proxy passes nothing from now on
            return await asyncio.wait_for(run, BOUND)
        finally:
            await session.shutdown()

    with fake_gateway("stall@signal", gateway.url) as fake:
        url = fake.url
        result = asyncio.run(main(fake))
    assert result.status == "crashed"
    assert result.message.startswith(f"The gateway at {url} stopped passing the kernel's messages (nothing came back")
    assert result.message.endswith("while your code ran.")


def test_a_gateway_killed_mid_check_says_so(tmp_path):
    from tutor.engine.faults import GONE
    from tutor.grading.verify import verdict_from_run

    gw = start_gateway(tmp_path / "gateway.log")
    os.environ["PTFUND_TUTOR_GATEWAY_TOKEN"] = gw.token

    async def main() -> tuple:
        session = KernelSession(gateway=gw.url, recover=False)  # as a verification's kernel
        try:
            await session.start()
            run = asyncio.ensure_future(session.execute("import time\ntime.sleep(60)", timeout=100))
            await asyncio.sleep(1)
            gw.process.kill()
            return await asyncio.wait_for(run, BOUND)
        finally:
            await session.shutdown()

    try:
        result = asyncio.run(main())
    finally:
        del os.environ["PTFUND_TUTOR_GATEWAY_TOKEN"]
        stop_gateway(gw)
    assert result.status == "crashed"
    assert result.message == f"The gateway at {gw.url} closed the kernel's connection while your code ran."
    assert GONE not in result.message  # nothing was restarted
    headline = verdict_from_run(result, 20).headline
    assert headline.count("while") == 1, headline


def test_close_lets_the_callers_cancellation_through():
    with fake_gateway("quiet-ws") as fake:
        url = fake.url

        async def main() -> None:
            conn = GatewayConnection(GatewayClient(url), "fake-kernel")
            await conn.open()
            closing = asyncio.ensure_future(conn.close())
            await asyncio.sleep(0)  # close now waits for the reader to unwind
            closing.cancel()
            with pytest.raises(asyncio.CancelledError):
                await closing
            assert conn.closed

        asyncio.run(main())
