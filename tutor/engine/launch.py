"""Starting a local ipykernel without an installed kernelspec.

The kernel runs with this very interpreter, so the learner gets the torch the tutor was
installed with, whatever kernelspecs (or none) the machine has.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from jupyter_client.kernelspec import KernelSpec
from jupyter_client.manager import AsyncKernelManager

# An alternative launcher (preload_torch=True): ipykernel_launcher plus torch imported in a
# background thread from the first instant, to overlap ipykernel's own start-up. Measured
# (benchmarks/engine.py) it gains nothing: both halves hold the GIL nearly all the time, so
# it is off by default and kept for machines where that may differ.
LAUNCHER = r"""
import sys, threading
if sys.path and sys.path[0] in ("", "."):
    del sys.path[0]  # as ipykernel_launcher does; IPython adds the cwd back later
def _ptfund_import_torch():
    try:
        import torch  # noqa: F401
    except BaseException:
        pass  # the boot code imports it again and reports the error in one sentence
threading.Thread(target=_ptfund_import_torch, name="ptfund-import-torch", daemon=True).start()
from ipykernel import kernelapp
kernelapp.launch_new_instance()
"""

KERNEL_NAME = "ptfund-python"


def kernel_argv(preload_torch: bool = False) -> list[str]:
    if preload_torch:
        return [sys.executable, "-c", LAUNCHER, "-f", "{connection_file}"]
    return [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]


def make_kernel_spec(preload_torch: bool = False) -> KernelSpec:
    return KernelSpec(
        argv=kernel_argv(preload_torch),
        name=KERNEL_NAME,
        display_name="Python (ptfund-tutor)",
        language="python",
        interrupt_mode="signal",
        metadata={"debugger": False},
    )


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


class TutorKernelManager(AsyncKernelManager):
    """An AsyncKernelManager whose kernel spec is built in memory, not looked up on disk."""

    def __init__(self, *args, preload_torch: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self._tutor_spec = make_kernel_spec(preload_torch)
        self.kernel_name = KERNEL_NAME

    @property
    def kernel_spec(self) -> KernelSpec:  # type: ignore[override]
        return self._tutor_spec


def log_file_path(kernel_id: str) -> Path:
    """Where a kernel's own stdout/stderr go (never the learner's terminal: it would tear
    the TUI). Read back to explain a crash when needed."""
    folder = Path(tempfile.gettempdir()) / "ptfund-tutor-kernels"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{kernel_id}.log"
