"""A labelled horizontal bar chart in text: one row per label, bars scaled to the widest."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static


def bar_rows(rows: list[tuple[str, int]], width: int = 30) -> Content:
    top = max((v for _, v in rows), default=0)
    label_w = max((len(label) for label, _ in rows), default=0)
    parts: list = []
    for label, value in rows:
        n = 0 if top == 0 else max(1 if value else 0, round(width * value / top))
        parts += [(f"{label:<{label_w}} ", "$text-muted"), ("█" * n, "$text-accent"), f" {value}\n"]
    return Content.assemble(*parts)


class BarChart(Static):
    DEFAULT_CSS = "BarChart { height: auto; }"

    def show(self, rows: list[tuple[str, int]], width: int = 30) -> None:
        self.update(bar_rows(rows, width))
