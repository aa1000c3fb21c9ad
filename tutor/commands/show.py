"""``show LESSON[/EXERCISE]``: a lesson's intuition or an exercise's prompt as plain text
(screen readers, pipes, a second terminal). Never imports torch."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from tutor.errors import TutorError

if TYPE_CHECKING:
    from tutor.packs import models as m
    from tutor.packs.catalog import Catalog, ExerciseRef


def run(args: argparse.Namespace) -> int:
    from tutor.packs.catalog import Catalog

    catalog = Catalog.load(args.pack)
    for problem in catalog.problems:
        print(f"ptfund-tutor: {problem}", file=sys.stderr)
    if "/" in args.target:
        sys.stdout.write(exercise_text(catalog.find_exercise(args.target)))
    else:
        sys.stdout.write(lesson_text(_find_lesson(catalog, args.target)))
    return 0


def lesson_text(lesson: m.Lesson) -> str:
    from tutor.packs.plain_text import markdown_to_text

    lines = [lesson.title, "", markdown_to_text(lesson.intuition).rstrip(), ""]
    if lesson.exercises:
        lines += ["Exercises:"]
        lines += [f"- {lesson.id}/{ex.id}: {ex.title}" for ex in lesson.exercises]
        lines += ["", f"ptfund-tutor show {lesson.id}/EXERCISE prints one of them."]
    return "\n".join(lines) + "\n"


def exercise_text(ref: ExerciseRef) -> str:
    from tutor.packs.plain_text import indented_code, markdown_to_text

    ex = ref.exercise
    lines = [f"{ref.key}: {ex.title}", "", markdown_to_text(ex.prompt).rstrip()]
    if ex.setup_visible and ex.shown_setup.strip():
        lines += ["", "The setup runs first:", "", indented_code(ex.shown_setup)]
    if ex.starter.strip():
        lines += ["", "Starter code:", "", indented_code(ex.starter)]
    lines += ["", f"Check a file with: ptfund-tutor check {ref.key} --file FILE"]
    return "\n".join(lines) + "\n"


def _find_lesson(catalog: Catalog, target: str) -> m.Lesson:
    pack_id, _, lesson_id = target.rpartition(":")
    found = [les for pack, les in catalog.lessons() if les.id == lesson_id and (not pack_id or pack.id == pack_id)]
    if not found:
        raise TutorError(f"no lesson {target!r} (see `ptfund-tutor list`)")
    if len(found) > 1:
        raise TutorError(f"{target!r} is in several packs; write PACK:{lesson_id}")
    return found[0]
