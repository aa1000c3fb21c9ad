"""``docs [TOPIC]``: the documentation that ships in the wheel, printed as it is written."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tutor.errors import TutorError
from tutor.paths import docs_dir


def topics(root: Path) -> dict[str, Path]:
    """Topic name (the file's stem) -> file, in name order."""
    return {path.stem: path for path in sorted(root.glob("*.md"))}


def _title(path: Path) -> str:
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("# "):
                return line[2:].strip()
    return ""


def run(args: argparse.Namespace) -> int:
    found = topics(docs_dir())
    if not found:
        raise TutorError(f"no documentation found in {docs_dir()} (is the installation complete?)")
    if not args.topic:
        width = max(map(len, found))
        for name, path in found.items():
            print(f"{name:<{width}}  {_title(path)}")
        print("\nptfund-tutor docs TOPIC prints one of them.")
        return 0
    topic = args.topic.removesuffix(".md").removeprefix("docs/")
    if topic not in found:
        raise TutorError(f"no documentation topic {args.topic!r}: one of {', '.join(found)}")
    sys.stdout.write(found[topic].read_text(encoding="utf-8"))
    return 0
