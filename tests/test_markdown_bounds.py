"""Lesson Markdown too large for Textual to lay out quickly (a table of thousands of rows,
a list of thousands of items) is shown as the text it was written as, after a sentence that
says so; lessons of a sensible size are shown untouched."""

from __future__ import annotations

from pathlib import Path

from markdown_it import MarkdownIt

from tutor.app.widgets.lesson_markdown import LAYOUT_BUDGET, MAX_TABLE_CELLS, MAX_TEXT_LINES, bounded_markdown

REPO = Path(__file__).resolve().parent.parent


def table(columns: int, rows: int) -> str:
    head = "|" + "|".join(f"c{i}" for i in range(columns)) + "|\n"
    rule = "|" + "|".join("-" for _ in range(columns)) + "|\n"
    return head + rule + "".join("|" + "|".join(f"r{r}" for _ in range(columns)) + "|\n" for r in range(rows))


def blocks(text: str) -> list[str]:
    return [t.type for t in MarkdownIt("gfm-like").parse(text) if t.nesting == 1 or t.type == "fence"]


def test_every_built_in_lesson_text_is_shown_as_written():
    texts = sorted(REPO.glob("lessons/*/*.md"))
    assert texts
    for path in texts:
        text = path.read_text()
        assert bounded_markdown(text) == text, path


def test_a_huge_table_becomes_text_and_what_surrounds_it_stays_markdown():
    text = "# Shapes\n\nBefore.\n\n" + table(5, 2000) + "\nAfter **bold**.\n"
    shown = bounded_markdown(text)
    assert f"*A table of {5 * 2001:,} cells, shown as written:*" in shown
    assert "| r1999 | r1999" not in shown and "|r1999|r1999|r1999|r1999|r1999|" in shown  # the rows, as written
    kinds = blocks(shown)
    assert "table_open" not in kinds and kinds.count("fence") == 1
    assert shown.startswith("# Shapes\n\nBefore.\n") and shown.endswith("After **bold**.\n")
    small = "# T\n\n" + table(4, 10)  # 44 cells: a table as usual
    assert bounded_markdown(small) == small and MAX_TABLE_CELLS > 44


def test_what_is_past_the_budget_is_text_with_a_sentence_and_a_bound():
    items = "".join(f"- item {i}\n" for i in range(LAYOUT_BUDGET))
    text = "# List\n\nIntro.\n\n" + items
    shown = bounded_markdown(text)
    assert "*The rest of this text is too long to lay out; shown as written:*" in shown
    assert shown.startswith("# List\n\nIntro.\n")
    assert blocks(shown).count("list_item_open") == 0
    paragraphs = "".join(f"para {i}\n\n" for i in range(MAX_TEXT_LINES * 2))
    shown = bounded_markdown(paragraphs)
    assert blocks(shown).count("paragraph_open") <= LAYOUT_BUDGET + 2
    assert f"... {MAX_TEXT_LINES * 4 - (MAX_TEXT_LINES + LAYOUT_BUDGET * 2):,} more lines not shown" in shown


def test_text_holding_fences_is_shown_in_a_longer_fence():
    text = "".join(f"- item {i}\n" for i in range(LAYOUT_BUDGET)) + "\n```python\nx = 1\n```\n"
    shown = bounded_markdown(text)
    assert "````text" in shown and shown.rstrip().endswith("````")
    assert blocks(shown) == ["paragraph_open", "fence"]
