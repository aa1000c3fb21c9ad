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


@dataclass
class Verdict:
    status: VerdictStatus
    headline: str  # one sentence: "All 3 checks pass." / "2 of 3 checks fail."
    checks: list[CheckLine] = field(default_factory=list)
    mistakes: list[str] = field(default_factory=list)  # targeted messages; they lead the feedback
    error: str | None = None  # the learner's own traceback lines, or what happened to the kernel
    output: str = ""  # what the learner's code printed during verification (capped)
    elapsed: float = 0.0

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    def feedback(self) -> str:
        """Plain text for a terminal: mistakes first, then each check, then the error."""
        lines = [self.headline]
        for message in self.mistakes:
            lines.append(f"→ {message}")
        for check in self.checks:
            mark = "✓" if check.passed else "✗"
            lines.append(f"{mark} {check.message}")
        if self.error:
            lines.append("")
            lines.append(self.error.rstrip())
        return "\n".join(lines)

    def to_json(self) -> dict:
        data = asdict(self)
        data["passed"] = self.passed
        return data
