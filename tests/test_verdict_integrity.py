"""Verdicts that cannot be forged or fooled: each trick, added to a wrong solution of
views-strides/transpose-view, ends as a failed attempt whose sentence says what the code
did (real kernels, real torch; see docs/trust.md)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tutor.grading.verify import verify_in_fresh_kernel
from tutor.packs.catalog import Catalog

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent
TARGET = "views-strides/transpose-view"
# Right values in a, but t is a contiguous copy: the tricks below try to make it pass.
WRONG = "t = a.t().contiguous()\nt[0, 1] = 99\na[1, 0] = 99\n"
FORGED_BUNDLE = (
    "from IPython.display import display\n"
    "display({'application/vnd.ptfund+json': {'passed': True, 'checks': [], 'mistakes': [], 'error': None}}, raw=True)\n"
)


@pytest.fixture(scope="module")
def exercise():
    return Catalog.load().find_exercise(TARGET).exercise


def verify(exercise, code: str):
    return asyncio.run(verify_in_fresh_kernel(exercise, code))


PROBES = {
    # 1. a bundle of the checker's own result type, from the main thread or a thread
    "forged-bundle": (WRONG + FORGED_BUNDLE, "checker's own result format"),
    "forged-bundle-from-thread": (
        WRONG
        + "import threading, time\n"
        + "def later():\n    time.sleep(0.3)\n"
        + "".join("    " + line + "\n" for line in FORGED_BUNDLE.splitlines())
        + "threading.Thread(target=later).start()\n",
        "checker's own result format",
    ),
    # 2. rebinding the check library or json
    "rebind-run-check": (
        WRONG
        + "import ptfund_checks.runner as r\n"
        + "r.run_check = lambda c, ctx: {'id': c.get('id'), 'kind': c.get('kind'), 'passed': True,"
        + " 'expected': None, 'actual': None, 'message': 'ok', 'details': {}}\n",
        "replaced ptfund_checks.runner.run_check",
    ),
    "rebind-jsonable": (
        WRONG
        + "import ptfund_checks.runner as r\nold = r.jsonable\nr.jsonable = lambda x: {**old(x), 'passed': True}\n",
        "replaced ptfund_checks.runner.jsonable",
    ),
    "rebind-kinds": (
        WRONG
        + "import ptfund_checks.kinds as k\nfrom ptfund_checks.context import Outcome\n"
        + "for name in list(k.KINDS):\n    k.KINDS[name] = lambda c, ctx: Outcome(True, 'ok')\n",
        "replaced ptfund_checks.kinds.KINDS",
    ),
    "wrap-json-dumps": (
        WRONG
        + "import json\n_d = json.dumps\n"
        + "def dumps(o, *a, **k):\n"
        + "    if isinstance(o, dict) and 'passed' in o:\n"
        + "        o = {**o, 'passed': True, 'checks': [], 'error': None}\n"
        + "    return _d(o, *a, **k)\n"
        + "json.dumps = dumps\n",
        # The learner's kernel sends no verdict to wrap; the guard there names the patch.
        "replaced json.dumps",
    ),
    # 3. patching torch's accessors, a lying subclass, replaced builtins, a thread
    "patch-tensor-class": (
        WRONG
        + "import torch\ntorch.Tensor.stride = lambda self, *a: (1, 3)\n"
        + "torch.Tensor.is_contiguous = lambda self, *a, **k: False\n",
        "torch.Tensor.stride",
    ),
    "patch-tensor-instance": (
        WRONG
        + "t.stride = lambda *x: (1, 3)\nt.is_contiguous = lambda *x, **k: False\n"
        + "t.untyped_storage = lambda: a.untyped_storage()\n",
        "replaced t.is_contiguous on the tensor itself",
    ),
    "torch-function-subclass": (
        "import torch\n"
        "class Liar(torch.Tensor):\n"
        "    @classmethod\n"
        "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
        "        name = getattr(func, '__name__', '')\n"
        "        if name == 'stride':\n            return (1, 3)\n"
        "        if name == 'is_contiguous':\n            return False\n"
        "        return super().__torch_function__(func, types, args, kwargs or {})\n"
        + WRONG
        + "t = t.as_subclass(Liar)\n",
        "tensor subclass (Liar) that overrides __torch_function__",
    ),
    "replace-isinstance": (WRONG + "import builtins\nbuiltins.isinstance = lambda *x: True\n", "builtins.isinstance"),
    "thread-keeps-running": (
        WRONG + "import threading, time\nthreading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n",
        "left a background thread running",
    ),
    # 4. exceptions, KeyboardInterrupt, PASS-looking output
    "str-raises": (
        "class Weird(Exception):\n    def __str__(self):\n        raise RuntimeError('no')\n"
        + WRONG
        + "raise Weird()\n",
        "Your code raised Weird at line 7: (its message cannot be shown",
    ),
    "keyboard-interrupt": (WRONG + "raise KeyboardInterrupt\n", "Your code raised KeyboardInterrupt at line 4."),
    "sigint-to-itself": (
        WRONG + "import os, signal\nos.kill(os.getpid(), signal.SIGINT)\n",
        "Your code stopped the checker with KeyboardInterrupt",
    ),
    "stdout-replaced": (
        WRONG + "import sys\nclass Bad:\n    def write(self, s):\n        raise RuntimeError('no')\n"
        "    def flush(self):\n        raise RuntimeError('no')\nsys.stdout = Bad()\n",
        "Your code replaced sys.stdout",
    ),
    "eq-always-true-object": (
        WRONG.replace("a[1, 0] = 99\n", "")
        + "class Yes(float):\n    def __eq__(self, other):\n        return True\n"
        + "class A:\n    def __getitem__(self, i):\n        return self\n    def item(self):\n        return Yes(0)\n",
        "t.stride() is (2, 1), expected (1, 3)",
    ),
    "pass-on-stdout": (
        WRONG + "print('views-strides/transpose-view: All 2 checks pass.')\nprint('{\"passed\": true}')\n",
        "t.stride() is (2, 1), expected (1, 3)",
    ),
}


@pytest.mark.parametrize("probe", list(PROBES))
def test_trick_fails_with_a_sentence_saying_what_the_code_did(exercise, probe):
    code, sentence = PROBES[probe]
    verdict = verify(exercise, code)
    assert not verdict.passed, verdict.feedback()
    assert verdict.status in ("fail", "error"), verdict.feedback()
    assert sentence in verdict.feedback(), verdict.feedback()


def test_right_answer_still_passes_and_its_own_display_is_harmless(exercise):
    verdict = verify(exercise, "t = a.t()\nt[0, 1] = 99\nfrom IPython.display import display\ndisplay(t)\n")
    assert verdict.passed, verdict.feedback()


def test_check_exit_code_after_pass_text_and_os_exit(tmp_path):
    answer = tmp_path / "answer.py"
    answer.write_text(WRONG + "print('{\"passed\": true}', flush=True)\nimport os\nos._exit(0)\n")
    env = {**os.environ, "PTFUND_TUTOR_HOME": str(tmp_path / "home")}
    r = subprocess.run(
        [sys.executable, "-m", "tutor", "check", TARGET, "--file", str(answer)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert r.returncode == 1, r.stdout + r.stderr
    assert "exit with status 0 (as os._exit does)" in r.stdout, r.stdout


def test_check_warms_the_kernel_before_the_clock_starts(monkeypatch, caplog):
    """torch's first-use costs (torch._dynamo, imported by the first meta-device op) are
    paid before the verification cell, not inside the exercise's time limit."""
    from tutor.packs import models as m

    monkeypatch.setenv("PTFUND_TUTOR_LAUNCHER", "spawn")  # a new process, not the warm fork server
    exercise = m.Exercise(
        id="warm",
        title="warm",
        prompt="Say whether torch is warm.",
        solution="warm = True\n",
        checks=[{"kind": "python", "code": "assert warm, 'torch._dynamo was not imported before the code ran'"}],
    )
    with caplog.at_level("WARNING", logger="tutor.engine"):
        verdict = verify(exercise, "import sys\nwarm = 'torch._dynamo' in sys.modules\n")
    assert verdict.passed, verdict.feedback() + "\n" + caplog.text  # a warm-up that failed says why
