"""A tiny lesson pack with one card of every type, written by quiz and progress tests."""

from __future__ import annotations

from pathlib import Path

PACK_YAML = """\
id: quiz-test
title: Quiz test pack
version: "0.1.0"
lessons: [views, numbers]
"""

VIEWS_YAML = """\
id: views
title: Views, strides and copies
intuition: |
  # Views
  ## Strides
  A view reads the same storage with other strides.
cards:
  - id: copy
    type: choice
    prompt: Which call always returns a copy?
    teaches: Strides
    options:
      - text: t.view(-1)
        feedback: view never copies.
      - text: t.clone()
        correct: true
        feedback: clone always copies.
  - id: shape
    type: short
    prompt: What is the shape of torch.zeros(1, 3), as a tuple?
    answers: ["(1, 3)"]
    explanation: torch.Size is a tuple subclass.
  - id: blanks
    type: cloze
    prompt: Fill in the blanks.
    text: "A {{view|reshape}} shares {{storage}} with its base."
  - id: transpose-view
    type: predict
    prompt: What happens?
    code: |
      import torch
      x = torch.zeros(2, 3)
      x.t().view(-1)
    expected: RuntimeError
"""

NUMBERS_YAML = """\
id: numbers
title: Numbers
intuition: |
  # Numbers
cards:
  - id: lr
    type: numeric
    prompt: One thousandth, as a number?
    answer: 0.001
    rel_tolerance: 0.01
"""


def write_pack(root: Path) -> Path:
    (root / "views").mkdir(parents=True)
    (root / "numbers").mkdir()
    (root / "pack.yaml").write_text(PACK_YAML)
    (root / "views" / "lesson.yaml").write_text(VIEWS_YAML)
    (root / "numbers" / "lesson.yaml").write_text(NUMBERS_YAML)
    return root
