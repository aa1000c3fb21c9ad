"""What the setup bound, as a check reads it: ``_setup.w`` is the object the setup bound to
``w``, whatever the learner's code bound to that name since.

A check that asks whether the learner kept a reference (``w is w_at_start``: the update went
through the tensor an optimizer holds) cannot rest on two names the learner's code may both
rebind (``w = w.detach(); w_at_start = w``). ``w is _setup.w_at_start`` can: the learner's
kernel keeps what the setup bound to each name a check reads this way, before the learner's
code runs, and sends it beside the names; the judge's reference keeps its own the same way.
Only the names the checks read are kept (keeping every setup object alive would keep
graphs and memory the learner's code let go).

Standard library only: the pack loader reads which names an exercise's checks ask for.
"""

from __future__ import annotations

import re
from typing import Any

SETUP_KEY = "__ptfund_setup__"  # beside the names: the setup's binding of each name kept
SETUP_NAME = "_setup"  # how a check's expression names them

_READ = re.compile(r"(?<![\w.])" + SETUP_NAME + r"\.([A-Za-z_][A-Za-z0-9_]*)")


def by_name(text: str) -> str:
    """``text`` with each ``_setup.NAME`` said as NAME (how feedback names the setup's object)."""
    return _PREFIX.sub("", text) if SETUP_NAME in text else text


_PREFIX = re.compile(r"(?<![\w.])" + SETUP_NAME + r"\.(?=[A-Za-z_])")


def reads(value: Any, depth: int = 0) -> list[str]:
    """The names read as ``_setup.NAME`` anywhere in ``value`` (an exercise's checks and
    mistakes, as the payload holds them: strings in dicts and lists), sorted."""
    found: set[str] = set()
    _collect(value, found, depth)
    return sorted(found)


def _collect(value: Any, found: set, depth: int) -> None:
    if depth > 20:
        return
    if isinstance(value, str):
        found.update(_READ.findall(value))
    elif isinstance(value, dict):
        for item in value.values():
            _collect(item, found, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _collect(item, found, depth + 1)


def of_payload(payload: dict) -> list[str]:
    """The names an exercise's checks and mistakes read as the setup bound them."""
    return reads([payload.get("checks"), payload.get("mistakes")])


def keep(ns: dict, names: Any) -> None:
    """Keep in reference namespace ``ns`` what its setup bound to ``names`` (right after the
    setup ran; a learner's namespace keeps its own outside the code's reach: ``kept``)."""
    if names:
        ns[SETUP_KEY] = kept(ns, names)


def kept(ns: dict, names: Any) -> dict:
    """What ``ns`` (a namespace right after the setup ran) binds to each of ``names``."""
    wanted = [n for n in names or () if isinstance(n, str)]
    return {n: ns[n] for n in wanted if n in ns}


class SetUp:
    """The setup's bindings in a check's scope: ``_setup.w``. A name the setup did not bind,
    or one no check asked to keep, is an error in the exercise, said as one."""

    __slots__ = ("_bound",)

    def __init__(self, bound: Any):
        self._bound = dict(bound) if isinstance(bound, dict) else {}

    def __getattr__(self, name: str):
        try:
            return self._bound[name]
        except KeyError:
            raise AttributeError(f"the setup binds no {name}") from None

    def __repr__(self) -> str:
        return f"<what the setup bound: {', '.join(sorted(self._bound)) or 'nothing kept'}>"


def scope_entry(ns: dict) -> dict:
    """``{"_setup": SetUp(...)}`` for a check's scope over namespace ``ns``."""
    return {SETUP_NAME: SetUp(ns.get(SETUP_KEY))}
