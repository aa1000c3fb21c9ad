"""Shared helpers for the app tests: a small pack, an app on it, waiting with deadlines.

No tests here. The pack is written for the tests (not the built-in one) so the screens
and snapshots do not change while the curriculum grows.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from textual.app import ScreenStackError
from textual.css.query import NoMatches

PACK_FILES = {
    "pack.yaml": """\
id: apptest
title: App test pack
version: "1.0.0"
authors: [tests]
lessons: [basics, reading]
""",
    "basics/lesson.yaml": """\
id: basics
title: Tensor basics
summary: Make tensors with the right shape and dtype.
intuition: intuition.md
exercises:
  - id: zeros
    title: A matrix of zeros
    prompt: |
      Make `t`, a **2 x 3** tensor of zeros with dtype **float64**, on `DEVICE`.
    starter: |
      import torch

      t = ...  # your code here
    solution: |
      import torch

      t = torch.zeros(2, 3, dtype=torch.float64, device=DEVICE)
    checks:
      - kind: tensor
        id: t-matches
        expr: t
        compare: [shape, dtype, device, values]
    hints:
      - "`torch.zeros` takes the shape first."
      - "Pass `dtype=torch.float64`."
      - "Also pass `device=DEVICE`."
    mistakes:
      - when: "isinstance(t, torch.Tensor) and t.dtype == torch.float32"
        message: "t is float32, the default: pass dtype=torch.float64."
  - id: double
    title: Double it
    prompt: Define `double(x)` that returns `x` times two.
    starter: |
      def double(x):
          ...
    solution: |
      def double(x):
          return x * 2
    checks:
      - kind: value
        expr: double(3)
cards:
  - id: default-dtype
    type: choice
    prompt: What dtype does `torch.zeros(2, 3)` have?
    options:
      - text: float32
        correct: true
        feedback: Right, float32 is torch's default floating dtype.
      - text: float64
        feedback: That is NumPy's default; torch defaults to float32.
  - id: shape-word
    type: short
    prompt: Which attribute of a tensor gives its size along each dimension?
    answers: [shape]
  - id: numel
    type: numeric
    prompt: How many elements does a 2 x 3 tensor have?
    answer: 6
  - id: predict-sum
    type: predict
    prompt: What does this print?
    code: |
      print(1 + 1)
    expected: "2"
  - id: cloze-dtype
    type: cloze
    prompt: Fill the blanks.
    text: "torch.zeros(2, 3) has dtype torch.{{float32}} and lives on the {{cpu}}."
""",
    "basics/intuition.md": """\
# Tensor basics

A tensor is an array that also knows where it lives and how its numbers are stored.

## Shape and dtype

```python
import torch
t = torch.zeros(2, 3)
t.shape, t.dtype  # (torch.Size([2, 3]), torch.float32): the shape first, then float32 (the default)
```
""",
    "reading/lesson.yaml": """\
id: reading
title: Reading only
intuition: |
  # Reading only

  A lesson with prose and no exercises.
""",
}


def make_pack(root: Path) -> Path:
    for rel, text in PACK_FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def make_app(pack: Path, data: Path, *, kernels: bool = True, trusted: bool = True):
    from tutor.app.app import TutorApp, TutorOptions

    if trusted:
        trust(pack, data)
    return TutorApp(TutorOptions(packs=[str(pack)], data_dir=str(data), builtin=False, start_kernels=kernels))


def trust(pack: Path, data: Path) -> None:
    from tutor.packs.catalog import Catalog
    from tutor.packs.trust import TrustStore

    catalog = Catalog.load([str(pack)], builtin=False)
    assert not catalog.problems, catalog.problems
    TrustStore(data).trust(catalog.packs[0])


async def wait_for(pilot, condition, timeout: float = 60.0, what: str = "condition") -> None:
    """Poll ``condition()`` between app frames until true; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if condition():
                return
        except (NoMatches, ScreenStackError):  # the widget or screen is not mounted yet
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        await pilot.pause(0.05)


async def wait_ready(pilot) -> None:
    await asyncio.wait_for(pilot.app.ready.wait(), 30)
    await pilot.pause()


def kernel_state(app) -> str:
    return app.kernel_status.state


async def open_first_lesson(pilot):
    from tutor.app.screens.lesson import LessonScreen

    app = pilot.app
    await wait_ready(pilot)
    await wait_for(pilot, lambda: app.screen.query_one("#lessons").option_count >= 3, what="the lesson list")
    await pilot.press("enter")
    await wait_for(pilot, lambda: isinstance(app.screen, LessonScreen), what="the lesson screen")
    screen = app.screen
    await wait_for(pilot, lambda: screen.query_one("#editor").text.strip() != "", what="the starter code")
    return screen
