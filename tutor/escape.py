"""Text from outside made harmless where it lands: a terminal, a spreadsheet, a web page, Markdown.

Pack text, learners' names and learners' output can hold control characters: ESC starts a
sequence that retitles a terminal, moves the cursor or rewrites what is on screen, so
before any of it is printed each control character is shown as an escape (``\\x1b``).
A CSV cell that starts with ``=``, ``+``, ``-`` or ``@`` is a formula to a spreadsheet,
so such a cell gets a leading apostrophe (OWASP's advice for CSV injection).
"""

from __future__ import annotations

import html
import re
import unicodedata

# C0 and C1 controls and DEL, except what a line of text may hold; lone surrogates too.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_CONTROL_OR_NEWLINE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def for_terminal(text: str, *, lines: bool = True) -> str:
    """``text`` with every control character shown as an escape; newlines and tabs are
    kept when ``lines`` (output), escaped too when not (a name, a title, one field)."""
    text = str(text)
    if lines:
        return _CONTROL.sub(_escape, text.replace("\r\n", "\n"))
    return _CONTROL_OR_NEWLINE.sub(_escape, text)


def name_for_terminal(text: str) -> str:
    """One name (a learner, a folder, a field) on one line."""
    return for_terminal(text, lines=False)


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def for_csv(value: object) -> object:
    """A cell a spreadsheet shows as text, never runs as a formula; numbers stay numbers."""
    if not isinstance(value, str):
        return value
    text = for_terminal(value, lines=False)
    if text.startswith(_FORMULA_START) or unicodedata.normalize("NFKC", text[:1]) in _FORMULA_START:
        return "'" + text
    return text


def for_html(text: object) -> str:
    """Text for an HTML page, as text: markup (``<script>``) and quotes become entities, and
    control characters escapes, so a learner's name can neither run nor break the page."""
    return html.escape(for_terminal(str(text), lines=False), quote=True)


# Any ASCII punctuation may be backslash-escaped in CommonMark; these are the ones that
# mean something inside a line (the text never starts one): emphasis, code, links and
# images, table cells, strikethrough, and the ':' of a URL that would become a link.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]!|~]|:(?=//))")


def for_markdown(text: object) -> str:
    """Text for inside a line of Markdown (a table cell, after a heading's marks), shown as
    it is: no emphasis, link, code span, table cell break or raw HTML can come of it."""
    text = for_terminal(str(text), lines=False)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)
