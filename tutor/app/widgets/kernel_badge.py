"""A one-line badge with the kernel's state and device, kept in step with the app."""

from __future__ import annotations

from textual.widgets import Static

from tutor.app.status import KernelStatus


class KernelBadge(Static):
    DEFAULT_CSS = """
    KernelBadge { width: auto; padding: 0 1; color: $text-muted; }
    KernelBadge.-ready { color: $text-success; }
    KernelBadge.-busy { color: $text-warning; }
    KernelBadge.-starting, KernelBadge.-restarting { color: $text-accent; }
    KernelBadge.-restarted { color: $text-warning; }
    KernelBadge.-dead, KernelBadge.-stopped { color: $text-error; }
    """

    def on_mount(self) -> None:
        self.watch(self.app, "kernel_status", self._show)

    def _show(self, status: KernelStatus) -> None:
        self.set_classes(f"-{status.state}")
        self.update(status.label)
        self.tooltip = status.message
