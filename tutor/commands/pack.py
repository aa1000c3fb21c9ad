"""``pack new | validate | test | schema``."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from tutor.escape import name_for_terminal

if TYPE_CHECKING:
    from tutor.packs.loader import Pack


def run_new(args: argparse.Namespace) -> int:
    from tutor.packs.scaffold import new_pack

    package = getattr(args, "package", False)
    root = new_pack(args.dir, package=package)
    print(f"Made a pack in {root}: one lesson, one exercise, two cards.")
    print(f"Next: ptfund-tutor pack validate {root} && ptfund-tutor pack test {root}")
    if package:
        print(f"Then: pip install {args.dir} (or build a wheel there), and `ptfund-tutor list` shows the pack.")
    return 0


def run_validate(args: argparse.Namespace) -> int:
    from tutor.packs.loader import check_pack

    pack, problems = check_pack(args.dir, cache=args.cache)
    for problem in problems:
        print(problem)
    if problems:
        n = len(problems)
        print(f"{n} problem{'s' if n != 1 else ''} found.")
        return 1
    assert pack is not None  # no problems: the pack loaded
    for problem in pack.warnings:
        print(f"warning: {problem}")
    for warning in compare_warnings(pack):
        print(f"warning: {name_for_terminal(warning)}")
    from tutor.packs.broad_mistakes import broad_mistakes

    for problem in broad_mistakes(pack):
        print(f"warning: {problem}")
    from tutor.packs.exposed_oracles import exposed_oracles

    for problem in exposed_oracles(pack):
        print(f"warning: {problem}")
    ex = sum(len(les.exercises) for les in pack.lessons)
    cards = sum(len(les.cards) for les in pack.lessons)
    print(
        f"{pack.id} {pack.manifest.version}: {len(pack.lessons)} lessons, {ex} exercises, {cards} cards, no problems."
    )
    return 0


def compare_warnings(pack: Pack) -> list[str]:
    """Checks whose ``compare`` has values but not shape: they fail a tensor of another
    shape only through its values, with a less direct sentence than a shape mismatch."""
    from tutor.packs.models import FunctionCheck, TensorCheck

    out = []
    for lesson in pack.lessons:
        for ex in lesson.exercises:
            for i, check in enumerate(ex.checks):
                if not isinstance(check, (TensorCheck, FunctionCheck)):
                    continue
                if "values" in check.compare and "shape" not in check.compare and not check.broadcast:
                    name = check.id or f"check {i + 1}"
                    out.append(
                        f"{lesson.id}/{ex.id}: {name}: compare lists values but not shape; add shape "
                        "(or broadcast: true if values may broadcast)"
                    )
    return out


def run_schema(args: argparse.Namespace) -> int:
    from tutor.packs.schema import pack_schema

    print(json.dumps(pack_schema(), indent=2))
    return 0


def run_test(args: argparse.Namespace) -> int:
    from tutor.commands.check import require_trust
    from tutor.grading.packtest import run_pack_test

    return run_pack_test(args, before_run=lambda pack: require_trust(pack, args))
