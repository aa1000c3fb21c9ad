"""What the UI shows about the kernel, as one immutable value the app publishes."""

from __future__ import annotations

from dataclasses import dataclass

# Engine states (tutor.engine.events.KernelState) plus "restarted", shown after a crash or
# a restart until the next run, so the learner sees that the namespace is fresh.
LABELS = {
    "off": "kernel off",
    "starting": "kernel starting…",
    "ready": "kernel ready",
    "busy": "kernel busy",
    "restarting": "kernel restarting…",
    "restarted": "kernel restarted",
    "dead": "kernel stopped",
    "stopped": "kernel stopped",
}


@dataclass(frozen=True)
class KernelStatus:
    state: str = "starting"
    device: str | None = None  # DeviceInfo.label(), once the kernel reported it
    message: str | None = None  # one sentence, e.g. why it restarted

    @property
    def label(self) -> str:
        text = LABELS.get(self.state, f"kernel {self.state}")
        return f"{text} · {self.device}" if self.device else text
