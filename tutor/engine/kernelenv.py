"""The environment a kernel starts with and whether kernels are forked here: light enough
for a process to decide, before its own imports, to start its fork server (forkclient.py)."""

from __future__ import annotations

import os
import sys

LAUNCHER_ENV = "PTFUND_TUTOR_LAUNCHER"  # "fork" or "spawn"; unset: fork where it is known safe


def kernel_env(extra_env: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    # Kernel-side noise that would otherwise end up in the log on every start.
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    env.setdefault("PYTHONUNBUFFERED", "1")
    # The kernel must not inherit a parent's Jupyter connection, e.g. when the tutor itself
    # runs inside a notebook.
    for key in ("JPY_PARENT_PID", "JPY_SESSION_NAME"):
        env.pop(key, None)
    if extra_env:
        env.update({str(k): str(v) for k, v in extra_env.items()})
    return env


def fork_refusal() -> str | None:
    """Why fresh kernels are not forked here, or None when they are."""
    choice = os.environ.get(LAUNCHER_ENV, "").strip().lower()
    if choice == "spawn":
        return f"{LAUNCHER_ENV}=spawn"
    if not hasattr(os, "fork"):
        return "this platform cannot fork"
    # macOS can fork, but its system frameworks are not fork-safe once loaded (torch loads
    # Accelerate and Metal); it is opt-in there until proven.
    if not sys.platform.startswith("linux") and choice != "fork":
        return f"forking is opt-in on {sys.platform} ({LAUNCHER_ENV}=fork)"
    return None
