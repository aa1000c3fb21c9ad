"""``pack new DIR``: a small pack that works, for an author to grow from."""

from __future__ import annotations

from pathlib import Path

from tutor.errors import TutorError

_FILES = {
    "pack.yaml": """\
# yaml-language-server: $schema=pack.schema.json
id: {pack_id}
title: My first pack
version: "0.1.0"
authors: [Your Name]
torch: ">=2.2"
description: A pack made with `ptfund-tutor pack new`; grow it from here.
lessons:
  - first-steps
""",
    "first-steps/lesson.yaml": """\
# yaml-language-server: $schema=../pack.schema.json
id: first-steps
title: First steps with tensors
summary: Make a tensor with the shape and dtype a function expects.
intuition: intuition.md

exercises:
  - id: zeros
    title: A matrix of zeros
    prompt: |
      Make `t`, a **2 x 3** tensor of zeros with dtype **float64**, on `DEVICE`.
    starter: |
      import torch

      t = ...  # your code here
    solution: solution_zeros.py
    # A pass is checked again on other data (a second world: setup with another seed, or
    # `variants:`); this answer is one fixed tensor, so there is no data to vary.
    second_world: false
    second_world_reason: the answer is one fixed tensor, computed from no data
    checks:
      - kind: tensor
        id: t-matches
        expr: t
        compare: [shape, dtype, device, values]
    hints:
      - "`torch.zeros` takes the shape first."
      - "Pass `dtype=torch.float64` and `device=DEVICE`."
    mistakes:
      - when: "isinstance(t, torch.Tensor) and t.dtype == torch.float32"
        message: "t is float32, the default: pass dtype=torch.float64."
    wrong_solutions:
      - code: |
          import torch
          t = torch.zeros(2, 3, device=DEVICE)
        expect: "pass dtype=torch.float64"

cards:
  - id: default-dtype
    type: choice
    prompt: What dtype does `torch.zeros(2, 3)` have?
    teaches: Shape and dtype
    options:
      - text: float32
        correct: true
        feedback: Right, float32 is torch's default floating dtype.
      - text: float64
        feedback: That is NumPy's default; torch defaults to float32.
  - id: shape-of-zeros
    type: short
    prompt: What does `torch.zeros(2, 3).shape` print?
    answers: ["torch.Size([2, 3])"]
    explanation: A torch.Size is a tuple subclass.
""",
    "first-steps/intuition.md": """\
# First steps with tensors

A tensor is an array that also knows **where** it lives (its device) and **how** each
number is stored (its dtype).

## Shape and dtype

`torch.zeros(2, 3)` makes 2 rows and 3 columns of float32 zeros. Ask a function's
contract for all three: shape, dtype and device.
""",
    "first-steps/solution_zeros.py": """\
import torch

t = torch.zeros(2, 3, dtype=torch.float64, device=DEVICE)
""",
}


# `pack new --package`: a Python project whose wheel carries the pack and declares it with
# an entry point (tutor/packs/installed.py). Its version is the one in pack.yaml.
_PACKAGE_FILES = {
    "pyproject.toml": """\
[build-system]
requires = ["hatchling>=1.18"]
build-backend = "hatchling.build"

[project]
name = "{dist_name}"
dynamic = ["version"]
description = "A ptfund-tutor lesson pack: {pack_id}"
requires-python = ">=3.10"

# ptfund-tutor finds the pack through this entry point: NAME = "PACKAGE:FOLDER".
[project.entry-points."ptfund_tutor.packs"]
{pack_id} = "{package}:lessons"

# One version: the pack's own, from pack.yaml.
[tool.hatch.version]
path = "{package}/lessons/pack.yaml"
pattern = '^version: "(?P<version>[^"]+)"'

[tool.hatch.build.targets.wheel]
packages = ["{package}"]
""",
    "{package}/__init__.py": '"""The lesson pack {pack_id} for ptfund-tutor, in the folder lessons/."""\n',
}


def new_pack(directory: str | Path, *, package: bool = False) -> Path:
    """Write a small working pack in ``directory`` and return the pack folder; with
    ``package``, a Python project around it (the pack in PACKAGE/lessons)."""
    top = Path(directory)
    if top.exists() and any(top.iterdir()):
        raise TutorError(f"{top} already exists and is not empty: choose a new folder")
    pack_id = "".join(c if c.isalnum() else "-" for c in top.resolve().name.lower()).strip("-") or "my-pack"
    if not pack_id[0].isalnum():
        pack_id = "pack-" + pack_id
    files = dict(_FILES)
    root = top
    if package:
        name = pack_id.replace("-", "_")
        name = name if name.endswith("_pack") else name + "_pack"
        name = name if name[0].isalpha() else "pack_" + name
        fill = {"{package}": name, "{dist_name}": name.replace("_", "-"), "{pack_id}": pack_id}
        root = top / name / "lessons"
        files = {f"{name}/lessons/{rel}": text for rel, text in _FILES.items()}
        for rel, text in _PACKAGE_FILES.items():
            for key, value in fill.items():
                rel, text = rel.replace(key, value), text.replace(key, value)
            files[rel] = text
    try:
        for rel, text in files.items():
            path = top / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text.replace("{pack_id}", pack_id), encoding="utf-8")
        import json

        from tutor.packs.schema import pack_schema

        (root / "pack.schema.json").write_text(json.dumps(pack_schema(), indent=1) + "\n", encoding="utf-8")
    except OSError as exc:
        raise TutorError(f"cannot write the pack in {root}: {exc.strerror}") from None
    return root
