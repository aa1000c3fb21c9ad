"""TUI startup, side by side in one run (the targets in docs/architecture.md).

    python benchmarks/startup.py [--runs N] [--json]

Measures, each as the median of N runs:
- ``import textual.app``: ``python -c "import textual.app"``, the yardstick;
- first paint: ``ptfund-tutor`` started in a pseudo-terminal (120x40) until the home
  screen's frame reaches the terminal (its "Lessons" heading), measured from outside;
- lessons listed: until the catalog and progress are loaded and shown;
- UI process memory: RSS of the ptfund-tutor process once its kernel is ready, and
  whether torch is mapped into it (it must not be: torch lives in the kernels).

Target: first paint <= 2x import textual.app; UI RSS <= 150 MB; no torch in the UI.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import pty
import select
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

FIRST_PAINT = b"Lessons"
LISTED = b"press "  # "press enter on a lesson" / "press c to continue": data is shown
KERNEL_READY = b"kernel ready"
RSS_TARGET_MB = 150


def tutor_command() -> list[str]:
    script = Path(sys.executable).with_name("ptfund-tutor")
    return [str(script)] if script.exists() else [sys.executable, "-m", "tutor"]


def time_import_textual() -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import textual.app"], check=True)
    return time.perf_counter() - t0


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _torch_mapped(pid: int) -> bool:
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False
    return "libtorch" in maps or "/torch/" in maps


def run_app(data_dir: str, *, wait_kernel: bool, timeout: float = 180.0, extra: tuple[str, ...] = ()) -> dict:
    """Start the app in a pty; return when each marker first appeared (seconds from spawn).

    ``extra``: more arguments for ptfund-tutor (e.g. ``--pack DIR``); ``rss_mb`` is the UI
    process's memory when the last marker appeared."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = dict(os.environ, TERM="xterm-256color", COLUMNS="120", LINES="40")
    env.pop("NO_COLOR", None)
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [*tutor_command(), "--data-dir", data_dir, *extra],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        start_new_session=True,
        close_fds=True,
    )
    os.close(slave)
    seen: dict[str, float] = {}
    wanted = {"first_paint": FIRST_PAINT, "listed": LISTED}
    if wait_kernel:
        wanted["kernel_ready"] = KERNEL_READY
    buf = b""
    try:
        while len(seen) < len(wanted):
            if time.perf_counter() - t0 > timeout:
                raise TimeoutError(f"waited {timeout:g}s; saw {sorted(seen)}")
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    break
                buf = (buf + chunk)[-200_000:]
                now = time.perf_counter() - t0
                for name, marker in wanted.items():
                    if name not in seen and marker in buf:
                        seen[name] = now
        result = dict(seen)
        result["rss_mb"] = _rss_mb(proc.pid)
        if wait_kernel:
            result["torch_in_ui"] = _torch_mapped(proc.pid)
        return result
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)  # the app saves and stops its kernels
            proc.wait(timeout=15)
        except Exception:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        os.close(master)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    imports, paints, listed = [], [], []
    data = tempfile.mkdtemp(prefix="ptfund-bench-")
    try:
        run_app(data, wait_kernel=False)  # warm the page cache and create the database
        for _ in range(args.runs):  # interleaved, so both see the same machine state
            imports.append(time_import_textual())
            r = run_app(data, wait_kernel=False)
            paints.append(r["first_paint"])
            listed.append(r["listed"])
        mem = run_app(data, wait_kernel=True)
    finally:
        shutil.rmtree(data, ignore_errors=True)

    imp, paint, lst = (statistics.median(x) for x in (imports, paints, listed))
    result = {
        "runs": args.runs,
        "import_textual_app_s": round(imp, 3),
        "first_paint_s": round(paint, 3),
        "first_paint_ratio": round(paint / imp, 2),
        "lessons_listed_s": round(lst, 3),
        "kernel_ready_s": round(mem["kernel_ready"], 2),
        "ui_rss_mb": round(mem["rss_mb"], 1),
        "torch_in_ui_process": mem["torch_in_ui"],
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
    }
    result["meets_spec"] = bool(
        result["first_paint_ratio"] <= 2.0
        and result["ui_rss_mb"] <= RSS_TARGET_MB
        and not result["torch_in_ui_process"]
    )
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{'import textual.app':<28}{imp * 1000:8.0f} ms   (yardstick)")
        print(f"{'TUI first paint (home)':<28}{paint * 1000:8.0f} ms   {paint / imp:.2f}x   target <= 2x")
        print(f"{'lessons listed':<28}{lst * 1000:8.0f} ms")
        print(f"{'kernel ready (in the TUI)':<28}{mem['kernel_ready'] * 1000:8.0f} ms")
        print(f"{'UI process RSS':<28}{mem['rss_mb']:8.1f} MB   target <= {RSS_TARGET_MB} MB")
        print(f"{'torch in the UI process':<28}{'yes' if mem['torch_in_ui'] else 'no':>8}      target: no")
        print(
            f"median of {args.runs} runs; {os.cpu_count()} CPUs; meets the target: {'yes' if result['meets_spec'] else 'NO'}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
