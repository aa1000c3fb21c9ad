"""Lesson Markdown as plain text: for screen readers, pipes and one-line notices.

Markup a reader would hear or see as noise (backticks, asterisks, link syntax) goes; code
blocks stay, indented; lists keep their bullets and numbers; table rows become lines of
cells. Control characters are dropped so pack text cannot steer the terminal.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it.tree import SyntaxTreeNode

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
CODE_INDENT = "    "


def markdown_to_text(markdown: str) -> str:
    from markdown_it import MarkdownIt
    from markdown_it.tree import SyntaxTreeNode

    tree = SyntaxTreeNode(MarkdownIt("gfm-like").parse(markdown))
    blocks = _blocks(tree.children)
    return _CONTROL.sub("", "\n\n".join(b for b in blocks if b.strip())).rstrip() + "\n"


def indented_code(code: str) -> str:
    """A code block as plain text: indented, so it stands apart from the prose around it."""
    return "\n".join(CODE_INDENT + line if line else line for line in code.rstrip("\n").split("\n"))


def inline_to_text(markdown: str) -> str:
    """One paragraph's worth of Markdown (a hint, a feedback line) as one plain string."""
    return markdown_to_text(markdown).strip()


def _blocks(nodes: list[SyntaxTreeNode]) -> list[str]:
    return [_block(node) for node in nodes]


def _block(node: SyntaxTreeNode) -> str:
    kind = node.type
    if kind in ("paragraph", "heading"):
        return "".join(_inline(child) for child in node.children)
    if kind in ("fence", "code_block"):
        return indented_code(node.content)
    if kind in ("bullet_list", "ordered_list"):
        start = int(node.attrs.get("start", 1)) if kind == "ordered_list" else 1
        items = []
        for n, item in enumerate(node.children, start):
            mark = f"{n}. " if kind == "ordered_list" else "- "
            body = "\n\n".join(b for b in _blocks(item.children) if b.strip())
            items.append(_hang(mark, body))
        return "\n".join(items)
    if kind == "blockquote":
        return _hang("  ", "\n\n".join(_blocks(node.children)), first="  ")
    if kind == "table":
        return "\n".join(_table_rows(node))
    if kind == "hr":
        return ""
    if kind == "html_block":
        return node.content.rstrip("\n")
    return "\n\n".join(_blocks(node.children))


def _hang(mark: str, body: str, first: str | None = None) -> str:
    pad = " " * len(mark)
    lines = body.split("\n")
    return "\n".join([(first or mark) + lines[0], *[pad + line if line else line for line in lines[1:]]])


def _table_rows(node: SyntaxTreeNode) -> list[str]:
    rows = []
    for section in node.children:  # thead, tbody
        for row in section.children:
            cells = ["".join(_inline(c) for c in cell.children) for cell in row.children]
            rows.append(" | ".join(cell.strip() for cell in cells))
    return rows


def _inline(node: SyntaxTreeNode) -> str:
    kind = node.type
    if kind in ("text", "code_inline", "html_inline"):
        return node.content
    if kind in ("softbreak", "hardbreak"):
        return "\n"
    text = "".join(_inline(child) for child in node.children)
    href = str(node.attrs.get("href", "")) if kind == "link" else ""
    return f"{text} ({href})" if href and href != text else text
