"""Where kernels and the fork server write their own stdout and stderr."""

from __future__ import annotations

import tempfile
from pathlib import Path


def log_file_path(kernel_id: str) -> Path:
    """Where a kernel's own stdout/stderr go (never the learner's terminal: it would tear
    the TUI). Read back to explain a crash when needed."""
    folder = Path(tempfile.gettempdir()) / "ptfund-tutor-kernels"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{kernel_id}.log"
