"""Which instructor packs the learner has agreed to run (docs/trust.md).

A pack from outside the built-in set that contains Python (setup, checks, solutions,
predict cards) runs only after the learner trusts it. The decision is kept in the data
dir keyed by pack id and a hash of the pack's files, so an edited pack asks again; for a
pack installed with pip, by its distribution and version, so an upgrade asks again.
No textual here: the screens call this from workers.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from tutor.jsonfile import read_json, write_json
from tutor.packs.files import walk

if TYPE_CHECKING:
    from tutor.packs.loader import Pack

FILENAME = "trusted-packs.json"


def pack_has_python(pack: Pack) -> bool:
    """Exercises always carry Python (a solution and checks); of cards predict does, and
    any card with a probe; so does an intuition with a runnable Python block (pack test
    runs those)."""
    from tutor.packs.codeblocks import blocks

    return any(
        lesson.exercises
        or any(card.type == "predict" or getattr(card, "probe", None) for card in lesson.cards)
        or any(block.runs for block in blocks(lesson.intuition))
        for lesson in pack.lessons
    )


def needs_trust(pack: Pack) -> bool:
    return not pack.builtin and pack_has_python(pack)


def pack_digest(root: Path) -> str:
    """A hash of every file in the pack (names and bytes), in a stable order.

    Links inside the pack count as the files they point to; links out of it (which make
    the pack invalid) count by where they point, so retargeting one changes the hash.
    """
    digest = hashlib.sha256()
    found = walk(Path(root))
    for name, path in found.files:
        if any(part.startswith(".") for part in name.split("/")) or name.endswith(".pyc"):
            continue
        file_hash = hashlib.sha256()
        try:
            with open(path, "rb") as f:  # hashlib.file_digest needs Python 3.11
                while chunk := f.read(1 << 16):
                    file_hash.update(chunk)
        except OSError:
            continue
        digest.update(os.fsencode(name) + b"\0")  # the name's own bytes, whatever its encoding
        digest.update(file_hash.digest())
    for name, target in found.links_out:
        digest.update(os.fsencode(f"{name} -> {target}") + b"\0")
    return digest.hexdigest()[:32]


class TrustStore:
    def __init__(self, data_dir: Path):
        self.path = Path(data_dir) / FILENAME

    def _read(self) -> dict[str, str]:
        data = read_json(self.path)
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}

    def is_trusted(self, pack: Pack) -> bool:
        if not needs_trust(pack):
            return True
        return self._read().get(pack.id) == trust_token(pack)

    def trust(self, pack: Pack) -> None:
        data = self._read()
        data[pack.id] = trust_token(pack)
        write_json(self.path, data)


def trust_token(pack: Pack) -> str:
    """What the learner agreed to run: a pip-installed pack's distribution and version (an
    upgrade asks again), else the hash of the folder's files (an edit asks again)."""
    if pack.distribution is not None:
        return f"distribution {pack.distribution.name}=={pack.distribution.version}"
    return pack_digest(pack.root)
