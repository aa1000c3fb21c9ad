"""Snapshots of the main screens at 80x24 and 120x40 (pytest-textual-snapshot).

Frozen state: the test pack, a fresh data dir, no kernels (the badge reads "kernel off"),
no cursor blink, so nothing depends on timing or the machine. Update after an intended
change with `pytest tests/test_app_snapshots.py --snapshot-update` and look at the SVGs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_app_support import make_app, make_pack, wait_for, wait_ready

SIZES = [(80, 24), (120, 40)]


@pytest.fixture
def app(tmp_path: Path):
    return make_app(make_pack(tmp_path / "pack"), tmp_path / "data", kernels=False)


async def home_loaded(pilot) -> None:
    await wait_ready(pilot)
    await wait_for(pilot, lambda: pilot.app.screen.query_one("#lessons").option_count >= 3, 10, "lessons")
    await pilot.pause()


async def lesson_open(pilot) -> None:
    from tutor.app.screens.lesson import LessonScreen

    await home_loaded(pilot)
    await pilot.press("enter")
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, LessonScreen), 10, "the lesson")
    editor = pilot.app.screen.query_one("#editor")
    await wait_for(pilot, lambda: editor.text.strip() != "", 10, "the starter")
    # focus() takes effect a message later; on a loaded machine the snapshot could come first
    await wait_for(pilot, lambda: editor.has_focus and not editor.read_only, 10, "the editor's focus")
    fences = pilot.app.screen.query("WrappedFence")
    await wait_for(pilot, lambda: all(f._wrapped_at or not f.size.width for f in fences), 10, "code wrapped")
    editor.cursor_blink = False
    await pilot.pause()
    # TextArea's line cache keys the cursor row the same way when blinking is off as in a
    # blink's dark phase: a row cached then would be drawn without the cursor. Drop it.
    editor._line_cache.clear()
    editor.refresh()
    await pilot.pause()


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_home(app, snap_compare, size):
    assert snap_compare(app, terminal_size=size, run_before=home_loaded)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_lesson(app, snap_compare, size):
    assert snap_compare(app, terminal_size=size, run_before=lesson_open)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_lesson_with_verdict(app, snap_compare, size):
    from tutor.grading.verdict import CheckLine, Verdict

    async def run_before(pilot):
        await lesson_open(pilot)
        screen = pilot.app.screen
        screen.query_one("#results").active = "tab-checks"
        screen.query_one("#checks").show_verdict(
            Verdict(
                "fail",
                "The check fails.",
                checks=[
                    CheckLine(
                        "t-matches",
                        "tensor",
                        False,
                        "t has dtype torch.float32, expected torch.float64",
                        expected="torch.float64",
                        actual="torch.float32",
                    )
                ],
                mistakes=["t is float32, the default: pass dtype=torch.float64."],
            )
        )
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_quiz(app, snap_compare, size):
    async def run_before(pilot):
        await home_loaded(pilot)
        pilot.app.store.add_quiz_lesson("apptest", "basics", "added")  # as if opened: its cards are new
        await pilot.press("r")
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "queue", None), 10, "the quiz")
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_quiz_cloze(app, snap_compare, size):
    """A cloze card: its blanks show as [1]____ and [2]____, not as Markdown emphasis."""

    async def run_before(pilot):
        await home_loaded(pilot)
        pilot.app.store.add_quiz_lesson("apptest", "basics", "added")  # as if opened: its cards are new
        await pilot.press("r")
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "queue", None), 10, "the quiz")
        quiz = pilot.app.screen
        quiz.n = next(n for n, ref in enumerate(quiz.queue) if ref.card.type == "cloze")
        quiz.show_card()
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_progress(app, snap_compare, size):
    async def run_before(pilot):
        await home_loaded(pilot)
        await pilot.press("p")
        await wait_for(pilot, lambda: pilot.app.screen.query_one("#lesson-table").row_count == 2, 10, "the table")
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_help(app, snap_compare):
    async def run_before(pilot):
        await home_loaded(pilot)
        await pilot.press("f1")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_light_theme_lesson(app, snap_compare):
    async def run_before(pilot):
        await lesson_open(pilot)
        pilot.app.theme = "textual-light"
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_too_small(app, snap_compare):
    assert snap_compare(app, terminal_size=(70, 20), run_before=lambda pilot: pilot.pause())


def test_no_color(tmp_path, monkeypatch, snap_compare):
    """NO_COLOR: textual renders in monochrome; the app must stay readable without colour."""
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app(make_pack(tmp_path / "pack"), tmp_path / "data", kernels=False)
    assert app.no_color
    assert snap_compare(app, terminal_size=(80, 24), run_before=lesson_open)
