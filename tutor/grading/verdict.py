"""A verdict on an exercise attempt, as the CLI, the app and the progress store see it.

No torch, no textual: built from the check library's JSON result (see tutor/checks).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

VerdictStatus = Literal["pass", "fail", "error", "timeout", "crashed", "authoring-error"]


@dataclass(frozen=True)
class CheckLine:
    id: str | None
    kind: str
    passed: bool
    message: str
    expected: str | None = None
    actual: str | None = None
    # A hidden check as the learner sees it: passed or failed, nothing else (hiding.py).
    hidden: bool = False


@dataclass
class Verdict:
    status: VerdictStatus
    headline: str  # one sentence: "All 3 checks pass." / "2 of 3 checks fail."
    checks: list[CheckLine] = field(default_factory=list)
    mistakes: list[str] = field(default_factory=list)  # targeted messages; they lead the feedback
    error: str | None = None  # the learner's own traceback lines, or what happened to the kernel
    output: str = ""  # what the learner's code printed during verification (capped)
    elapsed: float = 0.0
    # One per message of ``mistakes``: the authored mistake's id, or "auto:..." for a diagnosis.
    mistake_ids: list[str] = field(default_factory=list)
    # A pass whose further worlds gave the reference the same data as the first (a setup
    # without random draws): it proves nothing more there, and pack test asks for a variant.
    worlds_alike: bool = False

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    def shown_checks(self) -> list[CheckLine]:
        """The checks a learner reads, failing ones first (in a small pane the first lines
        are what is seen), each group in the exercise's order; hidden ones are only counted."""
        visible = [check for check in self.checks if not check.hidden]
        return [check for check in visible if not check.passed] + [check for check in visible if check.passed]

    def lines(self) -> list[tuple[str, str]]:
        """(mark, text) rows as a learner reads them: targeted mistakes (→) lead, then each
        check (✗, then ✓). A cause already said is not said again: several checks often trip
        over the same root problem (a plain tensor attribute fails both the module and the
        state_dict check)."""
        rows = [("→", message) for message in self.mistakes]
        said = set(self.mistakes)
        for check in self.shown_checks():
            if check.passed:
                rows.append(("✓", check.message))
                continue
            parts = [p for p in check.message.split("; ") if p not in said and not any(p in s for s in said)]
            said.update(parts)
            name = check.id or f"{check.kind} check"
            rows.append(("✗", "; ".join(parts) if parts else f"{name}: fails for the same reason as above"))
        return rows + self.hidden_rows()

    def hidden_rows(self) -> list[tuple[str, str]]:
        """The hidden checks, counted: '✗ 2 hidden checks failed', '✓ 1 hidden check passed'."""
        rows = []
        for mark, passed, word in (("✗", False, "failed"), ("✓", True, "passed")):
            count = sum(c.hidden and c.passed == passed for c in self.checks)
            if count:
                rows.append((mark, f"{count} hidden check{'s' if count != 1 else ''} {word}"))
        return rows

    def feedback(self) -> str:
        """Plain text for a terminal: headline, mistakes, checks, then the error."""
        lines = [self.headline] + [f"{mark} {text}" for mark, text in self.lines()]
        if self.error:
            lines.append("")
            lines.append(self.error.rstrip())
        return "\n".join(lines)

    def to_json(self) -> dict:
        data = asdict(self)
        data["passed"] = self.passed
        return data
