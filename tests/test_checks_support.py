"""Helpers shared by the test_checks_* files (no tests here).

Checks and mistakes go through the real pydantic models and ``model_dump()``, exactly as
grading builds the payload, so every field is present (None when unset)."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

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
    judge_setup: str = "",
) -> dict:
    # The judge's path: the learner's values cross as data (both roles in this process).
    result = run_local(
        {
            "setup": setup,
            "judge_setup": judge_setup,
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


def write_pack(root: Path, exercises: str) -> Path:
    """A pack named ``root.name`` of one lesson, "bugs", holding ``exercises`` (YAML items)."""
    (root / "bugs").mkdir(parents=True)
    (root / "pack.yaml").write_text(f'id: {root.name}\ntitle: Tests\nversion: "0.1.0"\nlessons: [bugs]\n')
    (root / "bugs" / "lesson.yaml").write_text('id: bugs\ntitle: Bugs\nintuition: "# Bugs"\nexercises:\n' + exercises)
    return root


def cli_check(pack: Path, home: Path, ref: str, code: str) -> dict:
    """`ptfund-tutor check REF --json` of ``code`` in real kernels: a failing verdict's JSON."""
    answer = home.parent / f"{ref.rpartition('/')[2]}.py"
    answer.write_text(textwrap.dedent(code))
    env = {**os.environ, "PTFUND_TUTOR_HOME": str(home)}
    args = ["--pack", str(pack), "check", ref, "--file", str(answer), "--trust", "--json"]
    r = subprocess.run([sys.executable, "-m", "tutor", *args], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 1, r.stdout + r.stderr
    return json.loads(r.stdout)
