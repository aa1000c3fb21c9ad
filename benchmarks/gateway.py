"""A check's round trip through a local Jupyter Kernel Gateway vs a local kernel.

Both sides verify the same exercises' reference solutions from a warm spare (KernelPool),
interleaved so both see the same machine: the gateway adds its REST and websocket hops
to what a local kernel does over ZeroMQ. Target: the gateway's median at most 1.5x local.

Run: python benchmarks/gateway.py [--limit N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from gateway_server import start_gateway, stop_gateway  # noqa: E402

from tutor.packs.catalog import Catalog  # noqa: E402


async def measure(gateway_url: str, limit: int) -> dict[str, list[float]]:
    from tutor.engine import KernelPool
    from tutor.grading.verify import Verifier

    refs = list(Catalog.load().exercises())[:limit]
    pools = {"local": KernelPool(), "gateway": KernelPool(gateway=gateway_url)}
    times: dict[str, list[float]] = {name: [] for name in pools}
    try:
        for pool in pools.values():
            await pool.start()
        for ref in refs:
            for name, pool in pools.items():
                await pool.ready()  # the spare is warm: only the check's round trip is timed
                started = time.perf_counter()
                verdict = await Verifier(pool).verify(ref.exercise, ref.exercise.solution)
                times[name].append(time.perf_counter() - started)
                if not verdict.passed:
                    raise SystemExit(f"{name}: {ref.key} did not pass: {verdict.headline}")
    finally:
        for pool in pools.values():
            await pool.shutdown()  # waits for the kernels handed back too
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=12)
    args = parser.parse_args()
    gateway = start_gateway(Path(tempfile.mkdtemp(prefix="ptfund-gw-bench-")) / "gateway.log")
    os.environ["PTFUND_TUTOR_GATEWAY_TOKEN"] = gateway.token
    load = os.getloadavg()[0]
    try:
        times = asyncio.run(measure(gateway.url, args.limit))
    finally:
        stop_gateway(gateway)
    local, remote = statistics.median(times["local"]), statistics.median(times["gateway"])
    print(f"load average at start: {load:.1f}; cpus: {os.cpu_count()}; {len(times['local'])} exercises each")
    print("| what | median | ratio |")
    print("|---|---|---|")
    print(f"| check round trip, local kernel (warm spare) | {local * 1000:.0f} ms | |")
    print(
        f"| check round trip, kernel through a local gateway | {remote * 1000:.0f} ms | {remote / local:.2f}x (target <= 1.5x) |"
    )


if __name__ == "__main__":
    main()
