"""``ptfund-tutor doctor``: versions, device, data dir, how long a kernel takes to start,
how fresh kernels are started (forked from the fork server, or new processes and why) and
how a kernel that runs learner code is confined (docs/confinement.md).

torch's version and the device come from a kernel, like everything torch: this process
never imports torch (it must stay light enough for the TUI).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
from importlib import metadata
from typing import TYPE_CHECKING

from tutor import __version__
from tutor.paths import data_dir

if TYPE_CHECKING:
    from tutor.engine.events import DeviceInfo

PACKAGES = ("textual", "jupyter_client", "ipykernel")


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


# Read in the probe kernel: the report confine.enter left there (none: not confined).
CONFINEMENT_PROBE = "import os as _os; print(_os.environ.get('PTFUND_TUTOR_CONFINEMENT', '')); del _os"


async def _probe(
    device: str | None, connection_file: str | None
) -> tuple[DeviceInfo | None, float | None, str | None, str | None, float | None, dict | None]:
    """The first kernel's report (a kernel confined as for learner code); with the fork
    server, also how long the next one took (the first pays for starting the server)."""
    from tutor.engine import KernelSession
    from tutor.engine.launch import FORK

    session = KernelSession(device=device, connection_file=connection_file)
    try:
        await session.start()
        first = session.device_info, session.startup_time, session.checks_error, session.launcher
        confinement = _confinement_report((await session.execute(CONFINEMENT_PROBE, timeout=30)).output)
    finally:
        await session.shutdown()
    after = None
    if first[3] == FORK:
        session = KernelSession(device=device)
        try:
            await session.start()
            after = session.startup_time
        finally:
            await session.shutdown()
    return (*first, after, confinement)


def _confinement_report(output: str) -> dict | None:
    import json

    try:
        report = json.loads(output.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None
    return report if isinstance(report, dict) else None


def _confinement_rows(report: dict | None, where: str | None) -> list[tuple[str, str]]:
    """One row per layer, then what is not protected."""
    from tutor.engine.confine import LAYERS, UNPROTECTED

    if where is not None:
        return [("confinement", f"none: {where} is not started by the tutor, so it is not confined")]
    if report is None:
        report = {layer: "none: this kernel reported no confinement" for layer in LAYERS}
        report["unprotected"] = list(UNPROTECTED.values())
    rows = [("confinement", "of kernels that run learner code (check, grade, pack test, the app's checks)")]
    rows += [(f"  {layer}", str(report.get(layer, "unknown"))) for layer in LAYERS]
    rows += [("not protected", sentence) for sentence in report.get("unprotected") or []]
    return rows


async def _gateway_rows(url: str) -> list[tuple[str, str]]:
    """The gateway, its version and the kernels it offers (the device comes from the probe)."""
    from tutor.engine.gateway import ENV_KERNEL, GatewayClient

    client = GatewayClient(url)
    version = await client.version()
    specs = await client.kernelspecs()
    default = specs.get("default")
    names = sorted((specs.get("kernelspecs") or {}).keys())
    chosen = os.environ.get(ENV_KERNEL) or default
    listed = ", ".join(f"{n} (used)" if n == chosen else n for n in names) or "none"
    return [
        ("gateway", f"{url} (Jupyter Server API {version}{', token set' if client.token else ', no token'})"),
        ("kernelspecs", listed),
    ]


def run(args: argparse.Namespace) -> int:
    rows: list[tuple[str, str]] = [
        ("ptfund-tutor", __version__),
        ("python", f"{platform.python_version()} ({sys.executable})"),
    ]
    rows += [(name, _version(name)) for name in PACKAGES]
    rows.append(("data dir", str(data_dir(getattr(args, "data_dir", None)))))
    from tutor.grading.exposure import exposure

    rows.append(("learner code", exposure(data_dir(getattr(args, "data_dir", None)))))
    connection_file = getattr(args, "kernel", None)
    if connection_file:
        rows.append(("kernel", f"attached: {connection_file}"))
    _print(rows)
    sys.stdout.flush()

    from tutor.engine.errors import EngineError
    from tutor.engine.gateway import gateway_url

    gateway = None if connection_file else gateway_url()
    if gateway:
        try:
            _print(asyncio.run(_gateway_rows(gateway)))
        except EngineError as exc:
            _print([("gateway", f"{gateway}: {exc}")])
            return 1
        sys.stdout.flush()

    try:
        info, seconds, checks_error, launcher, after, confinement = asyncio.run(
            _probe(getattr(args, "device", None), connection_file)
        )
    except EngineError as exc:
        _print([("torch", "unknown"), ("device", "unknown"), ("kernel ready", f"failed: {exc}")])
        return 1
    assert info is not None  # a started kernel has reported its device
    late = [
        ("torch", info.torch_version or "unknown"),
        ("device", info.label() + (" (on the gateway)" if gateway else "")),
        (
            "kernel ready",
            f"{seconds:.2f} s (torch imported, checks loaded)"
            + (f"; the next one {after:.2f} s (the first started the fork server)" if after is not None else ""),
        ),
        ("kernels from", launcher or "the attached kernel"),
    ]
    late += _confinement_rows(
        confinement, "an attached kernel" if connection_file else "a gateway's kernel" if gateway else None
    )
    if checks_error:
        late.append(("checks", f"failed to load in the kernel: {checks_error}"))
    _print(late)
    return 1 if checks_error else 0


def _print(rows: list[tuple[str, str]]) -> None:
    for name, value in rows:
        print(f"{name + ':':<15} {value}")
