"""Horizontal bar charts as inline SVG, drawn in plain Python: the class report's page needs
no charting library and loads nothing."""

from __future__ import annotations

from tutor.escape import for_html

LABEL_WIDTH = 300
BAR_WIDTH = 320
ROW_HEIGHT = 22
MAX_LABEL = 44  # characters; a longer label is cut (the table beside the chart has it whole)


def _label(text: str) -> str:
    return text if len(text) <= MAX_LABEL else text[: MAX_LABEL - 1] + "…"


def bar_chart(bars: list[tuple[str, float, str]]) -> str:
    """One bar per (label, fraction of the full width, value shown after the bar)."""
    if not bars:
        return ""
    width = LABEL_WIDTH + BAR_WIDTH + 60
    height = ROW_HEIGHT * len(bars) + 4
    rows = []
    for i, (label, fraction, value) in enumerate(bars):
        y = 2 + i * ROW_HEIGHT
        length = max(0.0, min(1.0, fraction)) * BAR_WIDTH
        rows.append(
            f'<text x="{LABEL_WIDTH - 6}" y="{y + 15}" text-anchor="end">{for_html(_label(label))}</text>'
            f'<rect x="{LABEL_WIDTH}" y="{y + 3}" width="{BAR_WIDTH}" height="{ROW_HEIGHT - 6}" fill="#eee"/>'
            f'<rect x="{LABEL_WIDTH}" y="{y + 3}" width="{length:.1f}" height="{ROW_HEIGHT - 6}" fill="#3b7dd8"/>'
            f'<text x="{LABEL_WIDTH + BAR_WIDTH + 6}" y="{y + 15}">{for_html(value)}</text>'
        )
    return (
        f'<svg role="img" width="{width}" height="{height}" viewBox="0 0 {width} {height}">' + "".join(rows) + "</svg>"
    )
