"""YAML with positions: every value of a file mapped to its line and column.

PyYAML's C composer builds the node tree fast (a 500-lesson pack must load in under a
second); we construct plain Python values from the nodes ourselves so that each value's
position is kept and duplicate keys are caught. Booleans follow YAML 1.2 (only
true/false): ``yes`` and ``on`` stay strings, as an author writing prose expects.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tutor.packs.limits import MAX_YAML_ALIASES, MAX_YAML_DEPTH, MAX_YAML_NODES


# Base loaders resolve no implicit tags: PyYAML's resolver runs a regex loop per scalar
# in Python, the slowest part of loading; ``_scalar`` types plain scalars itself.
class _Loader(getattr(yaml, "CBaseLoader", yaml.BaseLoader)):  # type: ignore[misc]
    def resolve(self, kind, value, implicit):
        return "?"  # tags are unused: _build types values from the node kind and style


_INT_RE = re.compile(r"^[-+]?(0|[1-9][0-9_]*)$")
_FLOAT_RE = re.compile(r"^[-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?$")


@dataclass
class Located:
    """Plain data plus the position of every value, keyed by its path of keys and indexes."""

    data: object
    file: Path
    positions: dict[tuple, tuple[int, int]] = field(default_factory=dict)  # path -> (line, col), 1-based
    block: set[tuple] = field(default_factory=set)  # paths of | and > scalars: text starts a line below
    problems: list[tuple[tuple, int, int, str]] = field(default_factory=list)

    def pos(self, path: tuple) -> tuple[int, int]:
        """Position of the value at path, or of its nearest ancestor that exists."""
        while path not in self.positions and path:
            path = path[:-1]
        return self.positions.get(path, (1, 1))


class YamlSyntaxError(Exception):
    def __init__(self, line: int, col: int, message: str):
        super().__init__(message)
        self.line, self.col, self.message = line, col, message


_OPEN = (
    yaml.FlowSequenceStartToken,
    yaml.FlowMappingStartToken,
    yaml.BlockSequenceStartToken,
    yaml.BlockMappingStartToken,
)
_CLOSE = (yaml.FlowSequenceEndToken, yaml.FlowMappingEndToken, yaml.BlockEndToken)


# A line (as str.splitlines breaks them) indented more than two spaces per level allowed:
# a regex, because a loop over the lines was a tenth of listing a 5,000-lesson pack.
_DEEP_SPACES = " " * (2 * MAX_YAML_DEPTH + 1)
_DEEP_INDENT = re.compile(r"(?:\A|[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029])" + _DEEP_SPACES)


def _refuse_deep(text: str) -> None:
    """Refuse nesting deeper than MAX_YAML_DEPTH before composing: PyYAML's composer recurses
    once per level (libyaml's calls back into Python at each), and some releases (6.0)
    exhaust the C stack on a YAML bomb such as ``[[[[...`` instead of raising. The scanner
    does not recurse; it runs only when the text could nest that deep."""
    brackets = text.count("[") + text.count("{")
    if brackets <= MAX_YAML_DEPTH and (_DEEP_SPACES not in text or not _DEEP_INDENT.search(text)):
        return
    depth = 0
    for token in yaml.scan(text, Loader=_Loader):
        if isinstance(token, _OPEN):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                mark = token.start_mark
                raise YamlSyntaxError(
                    mark.line + 1,
                    mark.column + 1,
                    f"YAML nests deeper than {MAX_YAML_DEPTH} levels (the limit per file)",
                )
        elif isinstance(token, _CLOSE):
            depth -= 1


def compose(text: str) -> yaml.Node | None:
    """The node tree of one YAML document (None when empty); raises YamlSyntaxError."""
    try:
        _refuse_deep(text)
        return yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        raise YamlSyntaxError(
            mark.line + 1 if mark else 1, mark.column + 1 if mark else 1, f"YAML syntax: {problem}"
        ) from None
    except yaml.YAMLError as exc:
        raise YamlSyntaxError(1, 1, f"YAML syntax: {exc}") from None
    except (RecursionError, MemoryError):  # what is built so far is freed as this unwinds
        raise YamlSyntaxError(1, 1, "YAML that is too deep or too large for the parser") from None


def load_located(text: str, file: Path) -> Located:
    node = compose(text)
    located = Located(data=None, file=file)
    located.data = _Builder(located, anchors="&" in text).build(node, ()) if node is not None else None
    return located


def _scalar(node: yaml.ScalarNode) -> object:
    value = node.value
    if node.style:  # quoted or block: always a string
        return value
    if value in ("", "~", "null", "Null", "NULL"):
        return None
    if value in ("true", "True", "TRUE"):
        return True
    if value in ("false", "False", "FALSE"):
        return False
    first = value[0]
    if first.isdigit() or first in "+-.":
        if _INT_RE.match(value):
            try:
                return int(value.replace("_", ""))
            except ValueError:  # more digits than Python converts (4300): no field wants that
                return value
        if _FLOAT_RE.match(value) and any(ch.isdigit() for ch in value):
            return float(value.replace("_", ""))
        low = value.lower()
        if low in (".inf", "+.inf"):
            return float("inf")
        if low == "-.inf":
            return float("-inf")
        if low == ".nan":
            return float("nan")
    return value  # yes/no/on/off stay strings, as in YAML 1.2


def _at(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


class _Builder:
    """Plain values from the node tree, within the bounds of limits.py.

    The composer shares one node for an anchor and every alias to it, so a node met a
    second time is an alias use, and one met again inside itself is an alias that
    contains itself. Counting values as they are built stops alias bombs early. A text
    without ``&`` has no anchors, so the alias bookkeeping (per value) is skipped.
    """

    def __init__(self, located: Located, anchors: bool = True) -> None:
        self.located = located
        self.nodes = 0
        self.aliases = 0
        self.anchors = anchors
        self.seen: set[int] = set()
        self.open: set[int] = set()  # nodes being built: their ancestors on this path

    def build(self, node: yaml.Node, path: tuple) -> object:
        self.nodes += 1
        if self.nodes > MAX_YAML_NODES or len(path) > MAX_YAML_DEPTH:
            self._over_limit(node, path)
        located = self.located
        mark = node.start_mark
        located.positions[path] = (mark.line + 1, mark.column + 1)
        if isinstance(node, yaml.ScalarNode):
            if self.anchors:
                self._note_use(node)
            if node.style in ("|", ">"):
                located.block.add(path)
            return _scalar(node)
        if not self.anchors:
            return self._collection(node, path)
        self._note_use(node)
        key = id(node)
        self.open.add(key)
        try:
            return self._collection(node, path)
        finally:
            self.open.discard(key)

    def _note_use(self, node: yaml.Node) -> None:
        key = id(node)
        if key in self.open:
            raise YamlSyntaxError(*_at(node), "YAML alias contains itself (a value cannot be inside itself)")
        if key in self.seen:
            self.aliases += 1
            if self.aliases > MAX_YAML_ALIASES:
                raise YamlSyntaxError(
                    *_at(node), f"YAML expands aliases more than {MAX_YAML_ALIASES} times (the limit per file)"
                )
        self.seen.add(key)

    def _over_limit(self, node: yaml.Node, path: tuple) -> None:
        if len(path) > MAX_YAML_DEPTH:
            raise YamlSyntaxError(*_at(node), f"YAML nests deeper than {MAX_YAML_DEPTH} levels (the limit per file)")
        raise YamlSyntaxError(
            *_at(node), f"YAML holds more than {MAX_YAML_NODES} values once aliases are expanded (the limit per file)"
        )

    def _collection(self, node: yaml.Node, path: tuple) -> object:
        located = self.located
        build = self.build
        if isinstance(node, yaml.SequenceNode):
            return [build(item, (*path, i)) for i, item in enumerate(node.value)]
        if isinstance(node, yaml.MappingNode):
            out: dict = {}
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    located.problems.append((path, *_at(key_node), "a key must be a plain name"))
                    continue
                key = key_node.value
                if key in out:
                    located.problems.append(((*path, key), *_at(key_node), f"duplicate key {key!r}"))
                    continue
                out[key] = build(value_node, (*path, key))
                # keep the key's own position too: errors about unknown keys point at the key
                key_path = (*path, key, "__key__")
                located.positions[key_path] = _at(key_node)
            return out
        return None
