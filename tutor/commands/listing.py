"""``list [--json]``: packs, lessons and exercises with status. Never imports torch."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tutor.packs.catalog import Outline


def run(args: argparse.Namespace) -> int:
    from tutor.escape import name_for_terminal as t
    from tutor.packs.catalog import Outline
    from tutor.progress.status import language_setting

    # The outline, not the lessons: listing 5,000 lessons must not load them (docs/limits.md).
    catalog = Outline.load(args.pack, language=language_setting(args.data_dir))
    status = _statuses(args)
    for problem in catalog.problems:
        print(f"ptfund-tutor: {problem}", file=sys.stderr)
    if args.json:
        print(json.dumps(_as_json(catalog, status), indent=2))
    else:
        for pack in catalog.packs:
            languages = catalog.languages(pack.id)
            also = f", languages: {', '.join(languages)}" if len(languages) > 1 else ""
            # Titles and ids are pack text: escapes shown inert (name_for_terminal).
            print(t(f"{pack.title} [{pack.id} {pack.manifest.version}, {pack.source}{also}]"))
            for lesson in pack.lessons:
                done = sum(status.get(f"{pack.id}:{lesson.id}/{ex.id}") == "passed" for ex in lesson.exercises)
                print(
                    t(
                        f"  {lesson.id:<28} {lesson.title}  ({done}/{len(lesson.exercises)} done, {lesson.card_count} cards)"
                    )
                )
                for ex in lesson.exercises:
                    state = status.get(f"{pack.id}:{lesson.id}/{ex.id}", "new")
                    mark = {"passed": "✓", "attempted": "…"}.get(state, " ")
                    print(t(f"    {mark} {lesson.id}/{ex.id:<30} {ex.title}"))
    if catalog.broken and not catalog.packs:
        return 1
    return 0


def _as_json(catalog: Outline, status: dict[str, str]) -> dict:
    return {
        "packs": [
            {
                "id": pack.id,
                "title": pack.title,
                "version": pack.manifest.version,
                "builtin": pack.builtin,
                "root": str(pack.root),
                "distribution": None
                if pack.distribution is None
                else {"name": pack.distribution.name, "version": pack.distribution.version},
                "language": pack.manifest.language,
                "languages": catalog.languages(pack.id),
                "lessons": [
                    {
                        "id": lesson.id,
                        "title": lesson.title,
                        "cards": lesson.card_count,
                        "exercises": [
                            {
                                "id": f"{lesson.id}/{ex.id}",
                                "title": ex.title,
                                "status": status.get(f"{pack.id}:{lesson.id}/{ex.id}", "new"),
                            }
                            for ex in lesson.exercises
                        ],
                    }
                    for lesson in pack.lessons
                ],
            }
            for pack in catalog.packs
        ],
        "problems": [p.to_json() for p in catalog.problems],
    }


def _statuses(args: argparse.Namespace) -> dict[str, str]:
    from tutor.progress.status import exercise_statuses

    return exercise_statuses(args.data_dir)
