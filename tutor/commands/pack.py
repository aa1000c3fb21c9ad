"""``pack new | validate | test | schema``."""

from __future__ import annotations

import argparse
import json


def run_new(args: argparse.Namespace) -> int:
    from tutor.packs.scaffold import new_pack

    root = new_pack(args.dir)
    print(f"Made a pack in {root}: one lesson, one exercise, two cards.")
    print(f"Next: ptfund-tutor pack validate {root} && ptfund-tutor pack test {root}")
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
    ex = sum(len(les.exercises) for les in pack.lessons)
    cards = sum(len(les.cards) for les in pack.lessons)
    print(
        f"{pack.id} {pack.manifest.version}: {len(pack.lessons)} lessons, {ex} exercises, {cards} cards, no problems."
    )
    return 0


def run_schema(args: argparse.Namespace) -> int:
    from tutor.packs.schema import pack_schema

    print(json.dumps(pack_schema(), indent=2))
    return 0


def run_test(args: argparse.Namespace) -> int:
    from tutor.commands.check import require_trust
    from tutor.grading.packtest import run_pack_test

    return run_pack_test(args, before_run=lambda pack: require_trust(pack, args))
