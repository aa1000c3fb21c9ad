"""The baseline the engine's targets (docs/architecture.md) compare it with: a stock ipykernel (no torch, no boot
code) driven by a plain blocking jupyter_client, as any Jupyter front end would."""

from __future__ import annotations

import subprocess
import sys
from contextlib import asynccontextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tutor.engine.launch import TutorKernelManager


@asynccontextmanager
async def bare_kernel():
    """Yield (kernel manager, ready BlockingKernelClient); shut both down afterwards."""
    from jupyter_client.blocking import BlockingKernelClient

    km = TutorKernelManager(preload_torch=False)
    await km.start_kernel(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = BlockingKernelClient()
    client.load_connection_info(km.get_connection_info())
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        yield km, client
    finally:
        client.stop_channels()
        await km.shutdown_kernel(now=True)
