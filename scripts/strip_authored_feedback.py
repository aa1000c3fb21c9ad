"""Copy a lesson pack without its authored feedback: every exercise's ``mistakes:`` and
``wrong_solutions:`` and every check's ``message``, so that what a learner is told comes
from the product alone (the check library's diffs, signatures and protocol trace).

    python scripts/strip_authored_feedback.py lessons /tmp/stripped [--id NEW_ID]

The copy gets a different pack id (default: ``<id>-stripped``) so it can be loaded beside
the built-in pack: ``ptfund-tutor --pack /tmp/stripped check pytorch-fundamentals-stripped:LESSON/EXERCISE``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import yaml


def strip_lesson(data: dict) -> dict:
    for exercise in data.get("exercises") or []:
        exercise.pop("mistakes", None)
        exercise.pop("wrong_solutions", None)
        for check in exercise.get("checks") or []:
            check.pop("message", None)
    return data


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("dest", type=Path)
    parser.add_argument("--id", help="pack id of the copy (default: <id>-stripped)")
    args = parser.parse_args(argv)
    if args.dest.exists():
        shutil.rmtree(args.dest)
    shutil.copytree(args.source, args.dest)
    manifest_path = args.dest / "pack.yaml"
    manifest = yaml.safe_load(manifest_path.read_text())
    manifest["id"] = args.id or f"{manifest['id']}-stripped"
    manifest_path.write_text(yaml.safe_dump(manifest, sort_keys=False, allow_unicode=True))
    for lesson in manifest["lessons"]:
        path = args.dest / lesson / "lesson.yaml"
        path.write_text(
            yaml.safe_dump(strip_lesson(yaml.safe_load(path.read_text())), sort_keys=False, allow_unicode=True)
        )
    print(f"{args.dest}: pack {manifest['id']} without mistakes, wrong_solutions or check messages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
