"""A labelled horizontal bar chart in text: one row per label, bars scaled to the widest."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static


def bar_rows(
    rows: list[tuple[str, int]], width: int = 30, top: int | None = None, texts: list[str] | None = None
) -> Content:
    """One bar per (label, value); bars scale to ``top`` (the largest value by default).
    ``texts`` replace the numbers printed after the bars."""
    if top is None:
        top = max((v for _, v in rows), default=0)
    label_w = max((len(label) for label, _ in rows), default=0)
    parts: list = []
    for i, (label, value) in enumerate(rows):
        n = 0 if top == 0 else max(1 if value else 0, round(width * value / top))
        text = texts[i] if texts is not None else str(value)
        parts += [(f"{label:<{label_w}} ", "$text-muted"), ("█" * n, "$text-accent"), f" {text}\n"]
    return Content.assemble(*parts)


class BarChart(Static):
    DEFAULT_CSS = "BarChart { height: auto; }"

    def show(
        self, rows: list[tuple[str, int]], width: int = 30, top: int | None = None, texts: list[str] | None = None
    ) -> None:
        self.update(bar_rows(rows, width, top, texts))
