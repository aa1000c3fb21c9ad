"""A real Jupyter Kernel Gateway on 127.0.0.1 for the tests (a free port, a random token).

Its kernels use the python3 kernelspec of this environment (``python -m ipykernel_launcher``
with this interpreter's folder first on PATH), so they have the same torch as the tests.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Gateway:
    url: str
    token: str
    process: subprocess.Popen
    log: Path

    def get(self, path: str):
        request = urllib.request.Request(self.url + path, headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def kernels(self) -> list[dict]:
        # The listing can race a kernel that is shutting down (the gateway then answers 500
        # for that one request): asked again, it lists what is running.
        for _ in range(4):
            try:
                return self.get("/api/kernels")
            except urllib.error.HTTPError as exc:
                if exc.code < 500:
                    raise
                time.sleep(0.5)
        return self.get("/api/kernels")

    def env(self) -> dict[str, str]:
        return {"PTFUND_TUTOR_GATEWAY": self.url, "PTFUND_TUTOR_GATEWAY_TOKEN": self.token}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_gateway(log: Path, timeout: float = 120.0) -> Gateway:
    port, token = _free_port(), secrets.token_hex(16)
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    env["KG_LIST_KERNELS"] = "True"  # the tests check that kernels are deleted
    for name in ("PTFUND_TUTOR_GATEWAY", "PTFUND_TUTOR_GATEWAY_TOKEN"):
        env.pop(name, None)
    out = open(log, "wb")  # noqa: SIM115 (the server writes to it until it is stopped)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kernel_gateway",
            "--KernelGatewayApp.ip=127.0.0.1",
            f"--KernelGatewayApp.port={port}",
            f"--KernelGatewayApp.auth_token={token}",
            "--KernelGatewayApp.port_retries=0",
        ],
        stdout=out,
        stderr=subprocess.STDOUT,
        env=env,
    )
    gateway = Gateway(f"http://127.0.0.1:{port}", token, process, log)
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"the kernel gateway exited: {log.read_text(errors='replace')[-2000:]}")
        try:
            gateway.get("/api/kernelspecs")
            return gateway
        except (urllib.error.URLError, OSError):
            if time.monotonic() > deadline:
                stop_gateway(gateway)
                raise RuntimeError("the kernel gateway did not answer") from None
            time.sleep(0.2)


def stop_gateway(gateway: Gateway) -> None:
    gateway.process.terminate()
    try:
        gateway.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        gateway.process.kill()
        gateway.process.wait()
