"""``a.b.c`` for the expression ``a.b.c`` (names and attributes only), read from source."""

from __future__ import annotations

import ast


def dotted_name(node) -> str | None:
    """The dotted name an ``ast`` node spells (``torch.nn.functional.relu``), or None for
    anything but a name and attributes of it."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None
