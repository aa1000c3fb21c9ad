"""Causes for bugs the feedback used to be silent about (benchmarks/feedback_silent.md), with
no authored mistakes: a list nothing filled (unfilled.py), a count where a fraction was meant
(counts.py), a buffer never registered (scan.py) and a leaf's .grad still None when the
code read it (errorcause.py). Each is said only where the data establishes it; each case is a
real wrong solution with real torch, and the last tests run them through `ptfund-tutor check`
in real kernels."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from test_checks_support import check, verify

pytestmark = pytest.mark.slow

LOSSES = [check(kind="value", expr="losses")]
TRAIN = "losses = []\nfor step in range(4):\n    loss = float(step)\n    losses.append(loss)\n"


def said(code: str, solution: str, checks, setup: str = "import torch\n") -> str:
    r = verify(code, solution, checks, setup=setup)
    assert not r["passed"]
    return "\n".join(r["mistakes"])


# ---------------------------------------------------------------- a list nothing filled


def test_a_list_no_line_appends_to_is_named():
    code = "losses = []\nfor step in range(4):\n    loss = float(step)\nprint(min(losses) if losses else None)\n"
    text = said(code, TRAIN, LOSSES)
    assert (
        "losses is empty, where the reference's holds 4 items: no line of your code appends or adds anything to it "
        "(the reference calls losses.append(...))"
    ) in text
    # a list the setup made, unpacked alongside another
    code = "a, losses = [], []\nfor step in range(4):\n    a.append(step)\n"
    assert "losses is empty" in said(code, "a, losses = [], [0.0, 1.0]\n", LOSSES)


def test_an_append_that_never_ran_is_named_with_its_line():
    code = "losses = []\nfor step in range(0):\n    losses.append(float(step))\n"
    text = said(code, TRAIN, LOSSES)
    assert (
        "losses is empty, where the reference's holds 4 items: your code's losses.append(...) at line 3 never ran"
        in (text)
    )


@pytest.mark.parametrize(
    "code",
    [
        # emptied again after the appends ran: "never ran" would be false
        "losses = []\nfor step in range(4):\n    losses.append(float(step))\n    losses = []\n",
        "losses = []\nfor step in range(4):\n    losses.append(float(step))\nlosses.clear()\n",
        # filled through a function, an alias or a parameter of the same name: the source does not show it
        "def record(xs):\n    pass\nlosses = []\nrecord(losses)\n",
        "losses = []\nhistory = losses\n",
        "losses = []\ndef f(losses):\n    losses.append(1.0)\nf([])\n",
    ],
)
def test_an_empty_list_the_source_does_not_settle_gets_no_cause(code):
    assert "losses is empty" not in said(code, TRAIN, LOSSES)


def test_an_append_after_the_code_raised_is_not_said_to_have_never_run():
    code = "losses = []\nfor step in range(4):\n    loss = 1 / 0\n    losses.append(loss)\n"
    r = verify(code, TRAIN, LOSSES)
    assert r["error"]["ename"] == "ZeroDivisionError"
    assert "never ran" not in "\n".join(r["mistakes"])


# ---------------------------------------------------------------- a count where a fraction was meant

ACC_SETUP = "import torch\ntorch.manual_seed(0)\npred = torch.randint(0, 3, (50,))\ny = torch.randint(0, 3, (50,))\n"
ACC_SOLUTION = "accuracy = (pred == y).float().mean().item()\naccs = [(pred[:k] == y[:k]).float().mean().item() * k / 50 for k in (20, 35, 50)]\n"


def test_an_accuracy_summed_is_named_as_a_count():
    code = "accuracy = (pred == y).float().sum().item()\naccs = [(pred[:k] == y[:k]).float().sum().item() for k in (20, 35, 50)]\n"
    r = verify(
        code, ACC_SOLUTION, [check(kind="value", expr="accuracy"), check(kind="value", expr="accs")], setup=ACC_SETUP
    )
    text = "\n".join(r["mistakes"])
    assert (
        "a whole number exactly 50 times the expected value: consistent with a count where a fraction was meant" in text
    )
    assert ".sum() where .mean() over 50 values (50 is the size of pred's dimension 0) was meant" in text


@pytest.mark.parametrize(
    ("code", "solution"),
    [
        # a whole multiple by chance: 4.0 where 0.5 was meant, and no size of 8 in play
        ("accuracy = 4.0\n", "accuracy = 0.5\n"),
        # a whole number 3 where 1.0 was meant: too small a factor to read as a count
        ("accuracy = 3.0\n", "accuracy = 1.0\n"),
        # 50 times, but not a whole number: no count
        ("accuracy = 0.62 * 50 + 0.5\n", "accuracy = 0.62\n"),
        # a whole multiple that is no size of any tensor of the reference's
        ("accuracy = 0.62 * 100\n", "accuracy = 0.62\n"),
    ],
)
def test_a_number_that_is_not_established_as_a_count_gets_no_cause(code, solution):
    r = verify(code, solution, [check(kind="value", expr="accuracy")], setup=ACC_SETUP)
    assert not r["passed"]
    assert "a count where a fraction" not in "\n".join(r["mistakes"])


# ---------------------------------------------------------------- a buffer never registered

MODULE = """\
import torch
from torch import nn

class Standardize(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.register_buffer("mean", mean)
{std}

    def forward(self, x):
        return (x - self.mean) / self.std

norm = Standardize(torch.zeros(4), torch.ones(4))
"""
NORM_CHECKS = [
    check(kind="module", expr="norm", buffer_names=["mean", "std"]),
    check(kind="value", expr="norm.state_dict()"),
]


def _module(std_line: str) -> str:
    return MODULE.format(std=std_line)


def test_a_buffer_never_registered_is_named():
    text = said(_module("        pass"), _module('        self.register_buffer("std", std)'), NORM_CHECKS)
    assert (
        "norm has no std at all, where the reference's norm holds it as a buffer: Standardize.__init__ never "
        'registers it; add self.register_buffer("std", ...) there'
    ) in text


def test_a_buffer_kept_as_a_plain_attribute_is_not_said_to_be_missing():
    r = verify(_module("        self.std = std"), _module('        self.register_buffer("std", std)'), NORM_CHECKS)
    assert "never registers" not in "\n".join(r["mistakes"])
    assert "std is a plain tensor attribute" in r["checks"][0]["message"]


# ---------------------------------------------------------------- a leaf's .grad still None

GRAD_SETUP = "import torch\nw = torch.ones(3, requires_grad=True)\n"
GRAD_SOLUTION = "loss = (w * 2).sum()\nloss.backward()\nnorm = w.grad.norm().item()\n"


def test_a_leaf_s_grad_read_before_any_backward_is_named():
    code = "loss = (w * 2).sum()\nnorm = w.grad.norm().item()\n"
    r = verify(code, GRAD_SOLUTION, [check(kind="value", expr="norm")], setup=GRAD_SETUP)
    assert r["error"]["ename"] == "AttributeError"
    assert (
        "line 2 of your code, `norm = w.grad.norm().item()`, raised AttributeError because w.grad is None there: "
        "no backward() had reached w yet"
    ) in "\n".join(r["mistakes"])


def test_a_non_leaf_s_grad_is_not_blamed_on_a_missing_backward():
    # h is no leaf: its .grad stays None after backward() too
    code = "h = w * 2\nloss = h.sum()\nloss.backward()\nnorm = h.grad.norm().item()\n"
    r = verify(code, GRAD_SOLUTION, [check(kind="value", expr="norm")], setup=GRAD_SETUP)
    assert r["error"]["ename"] == "AttributeError"
    assert "no backward() had reached" not in "\n".join(r["mistakes"])


# ---------------------------------------------------------------- real kernels

PACK = """\
id: silent
title: Silent
version: "0.1.0"
lessons: [bugs]
"""
LESSON = """\
id: bugs
title: Bugs
intuition: "# Bugs"
exercises:
  - id: losses
    title: Keep the losses
    prompt: Keep each step's loss in `losses` and the accuracy in `accuracy`.
    setup: |
      import torch
      torch.manual_seed(0)
      pred = torch.randint(0, 3, (50,))
      y = torch.randint(0, 3, (50,))
      w = torch.ones(3, requires_grad=True)
    solution: |
      losses = []
      for step in range(4):
          loss = (w * step).sum()
          loss.backward()
          losses.append(w.grad.norm().item())
      accuracy = (pred == y).float().mean().item()
    checks:
      - kind: value
        expr: losses
      - kind: value
        expr: accuracy
  - id: standardize
    title: Standardize with buffers
    prompt: Write `Standardize` with buffers `mean` and `std`; make `norm`.
    setup: |
      import torch
      from torch import nn
    solution: |
      class Standardize(nn.Module):
          def __init__(self, mean, std):
              super().__init__()
              self.register_buffer("mean", mean)
              self.register_buffer("std", std)

          def forward(self, x):
              return (x - self.mean) / self.std

      norm = Standardize(torch.zeros(4), torch.ones(4))
    checks:
      - kind: module
        expr: norm
        buffer_names: [mean, std]
"""


@pytest.fixture(scope="module")
def pack(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("packs") / "silent"
    (root / "bugs").mkdir(parents=True)
    (root / "pack.yaml").write_text(PACK)
    (root / "bugs" / "lesson.yaml").write_text(LESSON)
    return root


def cli_check(pack: Path, home: Path, exercise: str, code: str) -> dict:
    answer = home.parent / f"{exercise}.py"
    answer.write_text(textwrap.dedent(code))
    env = {**os.environ, "PTFUND_TUTOR_HOME": str(home)}
    args = ["--pack", str(pack), "check", f"silent:bugs/{exercise}", "--file", str(answer), "--trust", "--json"]
    r = subprocess.run([sys.executable, "-m", "tutor", *args], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 1, r.stdout + r.stderr
    return json.loads(r.stdout)


def test_in_a_real_kernel_an_unfilled_list_and_a_count_are_named(pack, tmp_path):
    code = (
        "losses = []\nfor step in range(4):\n    loss = (w * step).sum()\n    loss.backward()\n"
        "accuracy = (pred == y).float().sum().item()\n"
    )
    data = cli_check(pack, tmp_path / "home", "losses", code)
    text = "\n".join(data["mistakes"])
    assert "losses is empty, where the reference's holds 4 items: no line of your code appends" in text, data
    assert "accuracy is" in text and "consistent with a count where a fraction was meant" in text, data


def test_in_a_real_kernel_a_leaf_s_grad_read_before_backward_is_named(pack, tmp_path):
    code = "losses = []\nfor step in range(4):\n    loss = (w * step).sum()\n    losses.append(w.grad.norm().item())\n"
    data = cli_check(pack, tmp_path / "home", "losses", code)
    assert any("because w.grad is None there: no backward() had reached w yet" in m for m in data["mistakes"]), data


def test_in_a_real_kernel_a_buffer_never_registered_is_named(pack, tmp_path):
    code = (
        "class Standardize(nn.Module):\n    def __init__(self, mean, std):\n        super().__init__()\n"
        '        self.register_buffer("mean", mean)\n\n    def forward(self, x):\n        return x - self.mean\n\n'
        "norm = Standardize(torch.zeros(4), torch.ones(4))\n"
    )
    data = cli_check(pack, tmp_path / "home", "standardize", code)
    assert any("Standardize.__init__ never registers it" in m for m in data["mistakes"]), data
