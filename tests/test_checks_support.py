"""Helpers shared by the test_checks_* files (no tests here).

Checks and mistakes go through the real pydantic models and ``model_dump()``, exactly as
grading builds the payload, so every field is present (None when unset)."""

import json

from pydantic import TypeAdapter

from tutor.checks.judge import run_local
from tutor.packs.models import Check, Mistake

_CHECK = TypeAdapter(Check)


def check(**fields) -> dict:
    return _CHECK.validate_python(fields).model_dump()


def mistake(**fields) -> dict:
    return Mistake(**fields).model_dump()


def verify(
    code: str,
    solution: str,
    checks,
    setup: str = "import torch\n",
    mistakes=(),
    seed: int = 0,
    device: str = "cpu",
    worlds=(),
) -> dict:
    # The judge's path: the learner's values cross as data (both roles in this process).
    result = run_local(
        {
            "setup": setup,
            "code": code,
            "solution": solution,
            "seed": seed,
            "checks": list(checks),
            "mistakes": list(mistakes),
            "device": device,
            "worlds": list(worlds),
        }
    )
    json.dumps(result)  # the result crosses the kernel boundary as JSON: it must serialise as is
    return result


def only(result: dict) -> dict:
    """The single check result of a one-check run."""
    assert len(result["checks"]) == 1, result
    return result["checks"][0]
