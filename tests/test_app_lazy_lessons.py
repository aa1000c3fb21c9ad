"""The app lists lessons from the packs' outlines and loads a lesson only when it is used:
opened, or asked in the quiz. A lesson with problems says its first one, FILE:LINE:COL,
when opened; the rest of its pack stays usable."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("textual")

from test_app_support import wait_for, wait_ready
from test_packs_outline import LESSON, write_pack

GOOD = LESSON.replace("{n}", "{id}")
# The outline (titles, ids) is fine; the body is not: an unknown check kind on line 13.
BROKEN = GOOD.replace("kind: value", "kind: nonsense")


def write_lessons(root: Path, lessons: dict[str, str]) -> Path:
    for lesson_id, text in lessons.items():
        (root / lesson_id).mkdir(parents=True)
        (root / lesson_id / "lesson.yaml").write_text(text.format(id=lesson_id))
    ids = "".join(f"  - {x}\n" for x in lessons)
    (root / "pack.yaml").write_text(f"id: lazy\ntitle: Lazy\nversion: '1.0'\nlessons:\n{ids}")
    return root


def app_for(pack: Path, data: Path):
    from tutor.app.app import TutorApp, TutorOptions

    return TutorApp(TutorOptions(packs=[str(pack)], data_dir=str(data), builtin=False, start_kernels=False))


def lessons_loaded(parses: list[Path]) -> list[str]:
    return [p.parent.name for p in parses if p.name == "lesson.yaml"]


async def test_home_lists_5000_lessons_and_loads_only_the_one_opened(tmp_path, parses):
    from tutor.app.screens.lesson import LessonScreen

    pack = write_pack(tmp_path / "many", 5000)
    app = app_for(pack, tmp_path / "data")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        lessons = app.screen.query_one("#lessons")
        await wait_for(pilot, lambda: lessons.option_count == 5001, 60, "5,000 lessons and the pack's title")
        assert lessons_loaded(parses) == []  # listed from the outline
        lessons.highlighted = 4322  # the pack's title is option 0
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, LessonScreen), 30, "the lesson")
        assert app.screen.lesson.title == "Lesson 4321"
        assert lessons_loaded(parses) == ["l4321"]
        await pilot.press("f4")  # next: the next lesson is loaded when it is reached
        await wait_for(pilot, lambda: app.screen.lesson.id == "l4322", 30, "the next lesson")
        assert lessons_loaded(parses) == ["l4321", "l4322"]


async def test_a_lesson_with_problems_says_where_when_opened_and_the_rest_stay_usable(tmp_path, parses):
    from tutor.app.screens.home import HomeScreen
    from tutor.app.screens.lesson import LessonScreen

    pack = write_lessons(tmp_path / "pack", {"a": GOOD, "b": BROKEN, "c": GOOD})
    app = app_for(pack, tmp_path / "data")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        lessons = app.screen.query_one("#lessons")
        await wait_for(pilot, lambda: lessons.option_count == 4, 30, "the three lessons")
        assert not app.screen.query_one("#problems").display  # nothing is wrong with the outline

        lessons.highlighted = 2  # b
        await pilot.press("enter")
        errors = lambda: [n for n in app._notifications if n.title == "Cannot open the lesson"]  # noqa: E731
        await wait_for(pilot, errors, 30, "the problem")
        [note] = errors()
        assert "b/lesson.yaml:13:15:" in note.message and "nonsense" in note.message, note.message
        assert "Traceback" not in note.message and note.message.count("\n") == 0
        assert isinstance(app.screen, HomeScreen)

        lessons.highlighted = 1  # a opens
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, LessonScreen), 30, "lesson a")
        await pilot.press("f4")  # next: b cannot load, so a stays open and says why
        await wait_for(pilot, lambda: len(errors()) == 2, 30, "the problem again")
        assert app.screen.lesson.id == "a"
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), 30, "home")
        lessons.highlighted = 3  # c opens
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, LessonScreen) and app.screen.lesson.id == "c", 30, "c")


async def test_the_quiz_loads_only_the_lessons_whose_cards_it_asks(tmp_path, parses):
    from tutor.app.screens.quiz import QuizScreen
    from tutor.progress import ProgressStore

    pack = write_lessons(tmp_path / "pack", {"a": GOOD, "b": BROKEN, "c": GOOD})
    data = tmp_path / "data"
    with ProgressStore.open(data) as store:
        store.add_quiz_lesson("lazy", "a", "added")
        store.add_quiz_lesson("lazy", "b", "added")
    app = app_for(pack, data)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await wait_for(pilot, lambda: app.screen.query_one("#lessons").option_count == 4, 30, "the lessons")
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, QuizScreen) and app.screen.queue, 30, "the quiz")
        assert [r.key for r in app.screen.queue] == ["a/one", "a/two"]  # b's card is left out, c is not in the quiz
        assert sorted(lessons_loaded(parses)) == ["a", "b"]
        [note] = [n for n in app._notifications if n.title == "Cards left out"]
        assert "b/lesson.yaml:13:15:" in note.message, note.message
