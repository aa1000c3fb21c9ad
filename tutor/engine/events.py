"""What a kernel run reports, as small dataclasses shared by the CLI, grading and the app.

No jupyter_client or torch import here: the app and grading read these types freely.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

KernelState = Literal["starting", "ready", "busy", "restarting", "dead", "stopped"]
RunStatus = Literal["ok", "error", "interrupted", "timeout", "crashed"]

# A run using less of a core than this is waiting (sleep, input, a lock), not computing.
WAITING_SHARE = 0.05


@dataclass(frozen=True)
class DeviceInfo:
    """The device the kernel itself detected (or was told to use with --device)."""

    kind: Literal["cuda", "mps", "cpu"]
    name: str  # "NVIDIA H200", "Apple MPS", "CPU"
    torch_version: str
    python_version: str = ""

    def label(self) -> str:
        return self.kind if self.kind == "cpu" else f"{self.kind} ({self.name})"


# ---- events streamed while code runs, in arrival order


@dataclass(frozen=True)
class StreamEvent:
    name: Literal["stdout", "stderr"]
    text: str


@dataclass(frozen=True)
class DisplayEvent:
    """execute_result or display_data: a mime bundle."""

    data: dict
    is_result: bool = False  # True for the value of the last expression (Out[n])


@dataclass(frozen=True)
class ErrorEvent:
    ename: str
    evalue: str
    traceback: tuple[str, ...]  # plain text lines, ANSI colour removed


@dataclass(frozen=True)
class OmittedEvent:
    """Output past the cap was dropped. Emitted once per run, when the run ends: after the
    streamed head (the first 2,000 lines), before the kept tail (the last 200 lines)."""

    lines: int = 0


@dataclass(frozen=True)
class StateEvent:
    state: KernelState
    message: str | None = None  # one sentence for the learner, e.g. after a crash


OutputEvent = StreamEvent | DisplayEvent | ErrorEvent | OmittedEvent | StateEvent


@dataclass
class RunResult:
    """The outcome of one execute."""

    status: RunStatus
    message: str | None = None  # one clear sentence when status is not ok/error ("... restarted")
    output: str = ""  # stdout+stderr as shown, capped, with an "N lines omitted" marker if any
    omitted_lines: int = 0
    error: ErrorEvent | None = None
    displays: list[DisplayEvent] = field(default_factory=list)
    result_text: str | None = None  # text/plain of the last expression's value, if any
    execution_count: int | None = None
    elapsed: float = 0.0
    # Where the kernel's CPU time could be read (a local kernel, a run with a CPU limit):
    # the CPU seconds the run used and, for a time-out, the share of a core it was using
    # at the end (near 0: waiting; near its thread count: computing).
    cpu_time: float | None = None
    cpu_share: float | None = None
    quiet_for: float | None = None  # seconds from the last printed output to the end; None: printed nothing
    refused: int = 0  # messages the kernel sent that were too large to take (their output is lost)

    @property
    def ok(self) -> bool:
        return self.status == "ok"
