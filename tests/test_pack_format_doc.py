"""docs/pack-format.md shows every field of the format in examples that validate."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel

from tutor.packs import models as m
from tutor.packs.loader import check_pack

DOC = Path(__file__).resolve().parent.parent / "docs" / "pack-format.md"


def _block(name: str) -> str:
    found = re.search(rf"```yaml {re.escape(name)}\n(.*?)```", DOC.read_text(), re.DOTALL)
    assert found, name
    return found.group(1)


def test_the_examples_are_a_valid_pack(tmp_path: Path):
    (tmp_path / "sums").mkdir(parents=True)
    (tmp_path / "pack.yaml").write_text(_block("pack.yaml"))
    (tmp_path / "sums" / "lesson.yaml").write_text(_block("lesson.yaml"))
    pack, problems = check_pack(tmp_path, cache=False)
    assert problems == [] and pack is not None, "\n".join(map(str, problems))
    ex = pack.lessons[0].exercises[0]
    assert ex.setup.startswith("import torch\nROWS = 4\n")  # the prelude heads the setup


def test_every_field_of_every_model_is_shown():
    text = _block("pack.yaml") + _block("lesson.yaml")
    models = [v for v in vars(m).values() if isinstance(v, type) and issubclass(v, BaseModel) and v is not m.Strict]
    missing = sorted(
        f"{model.__name__}.{name}"
        for model in models
        for name in model.model_fields
        if not re.search(rf"(^|[\s{{,-]){re.escape(name)}:", text, re.MULTILINE)
    )
    assert missing == [], missing
