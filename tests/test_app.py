"""The Textual app driven with Pilot: each learner flow, with real kernels and real SQLite.

Every wait polls a condition with a deadline (tests/test_app_support.wait_for); nothing
sleeps a fixed time to make it work.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("textual")

from test_app_support import make_app, make_pack, open_first_lesson, wait_for, wait_ready

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def pack(tmp_path: Path) -> Path:
    return make_pack(tmp_path / "pack")


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


async def type_text(pilot, text: str) -> None:
    for ch in text:
        await pilot.press("enter" if ch == "\n" else ch)


def output_text(screen) -> str:
    log = screen.query_one("#output")
    log.flush(final=True)
    return log.text  # the lines as printed, before wrapping to the pane


# ---------------------------------------------------------------- the lesson flow


@pytest.mark.slow
async def test_lesson_flow_type_run_check_fail_fix_pass_hint_reset(pack, data):
    app = make_app(pack, data)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_first_lesson(pilot)
        editor = screen.query_one("#editor")
        assert "t = ...  # your code here" in editor.text  # the starter

        # type a first attempt (float32: a classic mistake)
        await pilot.press("f7")  # select all: typing replaces the starter
        await type_text(pilot, "import torch\nt = torch.zeros(2, 3, device=DEVICE)\nprint(t.dtype)\n")
        assert editor.text.startswith("import torch\nt = torch.zeros(2, 3")

        # run in the live kernel: output streams into the output pane
        await wait_for(pilot, lambda: app.kernel_status.state == "ready", 120, "the kernel")
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: "torch.float32" in output_text(screen), 60, "the run's output")

        # the live namespace persists: the REPL sees t
        await pilot.click("#repl")
        await type_text(pilot, "t.shape\n")
        await wait_for(pilot, lambda: "torch.Size([2, 3])" in output_text(screen), 60, "the REPL's output")

        # completion by the kernel: tab in the REPL
        repl = screen.query_one("#repl")
        await type_text(pilot, "torch.zeros_lik")
        await pilot.press("tab")
        await wait_for(pilot, lambda: repl.value == "torch.zeros_like", 30, "the completion")
        repl.value = ""
        # and ctrl+space in the editor
        editor.focus()
        editor.move_cursor(editor.document.end)
        await type_text(pilot, "torch.zeros_lik")
        await pilot.press("ctrl+space")
        await wait_for(pilot, lambda: editor.text.endswith("torch.zeros_like"), 30, "the editor completion")

        # check: fails, with the targeted mistake first and expected vs actual
        checks = screen.query_one("#checks")
        await pilot.press("ctrl+t")
        await wait_for(pilot, lambda: checks.verdict is not None, 120, "the verdict")
        verdict = checks.verdict
        assert verdict.status == "fail"
        assert any("pass dtype=torch.float64" in m for m in verdict.mistakes)
        failed = [c for c in verdict.checks if not c.passed]
        assert failed and failed[0].expected and failed[0].actual

        # a hint: "hint 1 of 3", recorded in the store
        await pilot.press("ctrl+g")
        await wait_for(pilot, lambda: app.store.hints_used("apptest", "basics/zeros") == 1, 10, "the hint record")
        assert "Hint 1 of 3" in screen.query_one("#exercise-text").source

        # fix it and check again: pass, recorded as a passed attempt
        editor.focus()
        await pilot.press("f7")
        await type_text(pilot, "import torch\nt = torch.zeros(2, 3, dtype=torch.float64, device=DEVICE)\n")
        await pilot.press("ctrl+t")
        await wait_for(pilot, lambda: checks.verdict is not None and checks.verdict.passed, 120, "a pass")
        await wait_for(pilot, lambda: app.store.exercise_stats()[("apptest", "basics/zeros")].passed, 10, "the attempt")
        stats = app.store.exercise_stats()[("apptest", "basics/zeros")]
        assert stats.attempts == 2

        # the solution shows without asking once passed
        from tutor.app.screens.solution import SolutionScreen

        await pilot.press("f2")
        await wait_for(pilot, lambda: isinstance(app.screen, SolutionScreen), 10, "the solution")
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen, 10, "the lesson again")

        # reset to starter (an edit: ctrl+z would bring the code back)
        editor.focus()
        await pilot.press("f9")
        assert editor.text == app.catalog.load_lesson("apptest", "basics")[1].exercises[0].starter
        await pilot.press("ctrl+z")
        assert "float64" in editor.text


@pytest.mark.slow
async def test_loop_forever_is_interrupted_and_a_crash_restarts(pack, data):
    app = make_app(pack, data)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_first_lesson(pilot)
        editor = screen.query_one("#editor")
        await wait_for(pilot, lambda: app.kernel_status.state == "ready", 120, "the kernel")
        editor.load_text("x = 41\nwhile True:\n    pass\n")
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: app.kernel_status.state == "busy", 30, "the run to start")
        # ctrl+c, with the editor focused (where it is otherwise copy), stops the loop and
        # does not offer to quit
        assert editor.has_focus
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: "interrupted" in output_text(screen), 30, "the interrupt")
        assert app.kernel_status.state == "ready"
        assert not any("quit" in n.message for n in app._notifications)
        # while nothing runs, ctrl+c is the editor's copy again, not an interrupt
        editor.select_all()
        await pilot.press("ctrl+c")
        assert app.clipboard == editor.text
        assert not any("Nothing is running" in n.message for n in app._notifications)

        # the namespace survived the interrupt
        editor.load_text("print(x + 1)\n")
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: "42" in output_text(screen), 30, "the next run")

        # the Stop key (f6: not ctrl+b or ctrl+a, the prefixes of tmux and screen) does the same
        editor.load_text("while True:\n    pass\n")
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: app.kernel_status.state == "busy", 30, "the second run to start")
        await pilot.press("f6")
        await wait_for(pilot, lambda: app.kernel_status.state == "ready", 30, "the second interrupt")

        # a segfault: the kernel is restarted, the learner is told, the app stays up
        editor.load_text("import ctypes\nctypes.string_at(0)\n")
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: "crashed" in output_text(screen), 60, "the crash sentence")
        await wait_for(pilot, lambda: app.kernel_status.state == "restarted", 120, "the restart")
        # the draft is still there
        await wait_for(pilot, lambda: app.store.load_draft("apptest", "basics/zeros") is not None, 10, "the draft")
        assert "ctypes" in app.store.load_draft("apptest", "basics/zeros").code


@pytest.mark.slow
async def test_a_flood_of_output_stays_bounded_and_keys_still_work(pack, data):
    from tutor.app.widgets.output_log import MAX_LINES

    app = make_app(pack, data)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_first_lesson(pilot)
        await wait_for(pilot, lambda: app.kernel_status.state == "ready", 120, "the kernel")
        screen.query_one("#editor").load_text("for i in range(1_000_000):\n    print(i)\n")
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: app.kernel_status.state == "busy", 30, "the run to start")
        # keys are handled while the flood runs
        await pilot.press("ctrl+g")
        assert "Hint 1 of 3" in screen.query_one("#exercise-text").source
        await wait_for(pilot, lambda: "999999" in output_text(screen), 120, "the end of the flood")
        text = output_text(screen)
        assert "lines omitted" in text
        assert len(screen.query_one("#output").lines) <= MAX_LINES + 1


async def test_moving_between_exercises_and_lessons(pack, data):
    app = make_app(pack, data, kernels=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_first_lesson(pilot)
        editor = screen.query_one("#editor")
        # a lesson not started opens on its intuition
        assert screen.query_one("#reading").active == "tab-lesson"
        await pilot.press("f4")
        await wait_for(pilot, lambda: "def double" in editor.text, 10, "exercise 2")
        await pilot.press("f4")  # past the last exercise: the next lesson, which has none
        await wait_for(pilot, lambda: screen.lesson.id == "reading" and editor.read_only, 10, "the next lesson")
        assert "no exercises" in editor.text
        await pilot.press("f3")
        await wait_for(pilot, lambda: screen.lesson.id == "basics" and "def double" in editor.text, 10, "back")
        # f5 moves focus to the text so it scrolls from the keyboard, and back
        await pilot.press("f5")
        assert screen.query_one("#exercise-scroll").has_focus
        await pilot.press("f5")
        await wait_for(pilot, lambda: screen.query_one("#lesson-scroll").has_focus, 5, "the lesson text")
        await pilot.press("f5")
        assert screen.query_one("#output").has_focus  # the results pane (its Output tab is shown)
        await pilot.press("f5")
        assert editor.has_focus


async def test_solution_asks_first_until_passed(pack, data):
    from tutor.app.screens.confirm import ConfirmScreen
    from tutor.app.screens.solution import SolutionScreen

    app = make_app(pack, data, kernels=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_first_lesson(pilot)
        await pilot.press("f2")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10, "the question")
        await pilot.press("n")
        await wait_for(pilot, lambda: app.screen is screen, 10, "no solution")
        await pilot.press("f2")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10, "the question")
        await pilot.press("y")
        await wait_for(pilot, lambda: isinstance(app.screen, SolutionScreen), 10, "the solution")
        await pilot.press("enter")  # put it in the editor
        solution = app.catalog.load_lesson("apptest", "basics")[1].exercises[0].solution
        await wait_for(pilot, lambda: screen.query_one("#editor").text == solution, 10, "the solution in the editor")


async def test_a_long_solution_line_wraps_in_a_narrow_terminal(pack, data):
    # At 80 columns the dialog leaves about 66 for the code: a clipped line would hide
    # part of the answer, so every word of it must be on the screen as drawn.
    import html
    import re

    from tutor.app.screens.solution import SolutionScreen

    long_line = "result = " + " + ".join(f"weights_{n} * inputs_{n}" for n in range(8))
    app = make_app(pack, data, kernels=False)

    def drawn() -> str:
        svg = app.export_screenshot()
        return html.unescape(" ".join(re.findall(r">([^<>]*)</text>", svg))).replace("\xa0", " ")

    async with app.run_test(size=(80, 24)) as pilot:
        await open_first_lesson(pilot)
        app.push_screen(SolutionScreen("long", long_line))
        await wait_for(pilot, lambda: isinstance(app.screen, SolutionScreen) and "weights_0" in drawn(), 10, "it")
        await pilot.pause()
        missing = [word for word in long_line.split() if word not in drawn()]
        assert missing == []


# ---------------------------------------------------------------- drafts and position


async def test_a_failed_worker_is_told_and_logged(pack, data):
    """A store error inside a worker (here the hint record, whose worker has no handler of
    its own) reaches the learner as a notification and DATA_DIR/tutor.log as a line."""
    app = make_app(pack, data, kernels=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_first_lesson(pilot)
        app.store._conn.close()  # every later store call raises sqlite3.ProgrammingError
        await pilot.press("ctrl+g")
        await wait_for(
            pilot,
            lambda: any(n.title == "Something went wrong" for n in app._notifications),
            10,
            "the failure notification",
        )
        [note] = [n for n in app._notifications if n.title == "Something went wrong"]
        assert note.message == "Recording the hint failed: Cannot operate on a closed database."
        assert note.severity == "error"
    log = (data / "tutor.log").read_text(encoding="utf-8")
    assert "tutor.app ERROR worker" in log and "(group hint) failed" in log
    assert "sqlite3.ProgrammingError: Cannot operate on a closed database." in log


async def test_draft_and_position_survive_quit_and_reopen(pack, data):
    app = make_app(pack, data, kernels=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_first_lesson(pilot)
        await pilot.press("f4")  # next exercise
        await wait_for(pilot, lambda: "def double" in screen.query_one("#editor").text, 10, "exercise 2")
        await pilot.press("f7")
        await type_text(pilot, "def double(x):\nreturn x + x\n")  # Enter indents the body, and ends it
        await pilot.press("ctrl+q")  # quitting saves at once, debounce or not

    app = make_app(pack, data, kernels=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await wait_for(pilot, lambda: "Double it" in str(app.screen.query_one("#continue").render()), 10, "continue")
        await pilot.press("c")
        from tutor.app.screens.lesson import LessonScreen

        await wait_for(pilot, lambda: isinstance(app.screen, LessonScreen), 10, "the lesson")
        editor = app.screen.query_one("#editor")
        await wait_for(pilot, lambda: editor.text == "def double(x):\n    return x + x\n", 10, "the restored draft")
        assert app.screen.index == 1


async def test_enter_indents_after_a_block_opener_and_keeps_the_indent(pack, data):
    app = make_app(pack, data, kernels=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_first_lesson(pilot)
        editor = screen.query_one("#editor")
        await pilot.press("f7")
        await type_text(pilot, "def f(x):  # a comment: still a block\ns = '#:'\nfor i in range(3):\ns = i\n")
        await type_text(pilot, "continue\nreturn s\n")
        assert editor.text == (
            "def f(x):  # a comment: still a block\n"
            "    s = '#:'\n"  # the colon inside quotes opens nothing
            "    for i in range(3):\n"
            "        s = i\n"
            "        continue\n"
            "    return s\n"
        )


@pytest.mark.parametrize(
    ("position", "expected"),
    [
        (("apptest", "basics", "zeros"), "Tensor basics › Double it"),  # passed: on to the next one
        (("other-pack", "its-lesson", "its-exercise"), "Tensor basics › Double it"),  # --pack not given now
    ],
)
async def test_continue_skips_passed_exercises_and_survives_a_pack_left_out(pack, data, position, expected):
    from tutor.app.screens.lesson import LessonScreen
    from tutor.progress import ProgressStore

    with ProgressStore.open(data) as store:
        store.record_attempt("apptest", "basics/zeros", passed=True, code="t = 1", content_hash="h")
        store.set_position(*position)
    app = make_app(pack, data, kernels=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        cont = app.screen.query_one("#continue")
        await wait_for(pilot, lambda: expected in str(cont.render()), 10, "continue")
        assert "Start with the first lesson" not in str(cont.render())
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, LessonScreen), 10, "the lesson")
        assert app.screen.index == 1


async def test_at_80x24_f5_reaches_the_checks_and_they_grow(pack, data):
    app = make_app(pack, data, kernels=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_first_lesson(pilot)
        results, checks = screen.query_one("#results"), screen.query_one("#checks")
        results.active = "tab-checks"
        await pilot.pause()
        before = results.size.height
        for _ in range(3):  # editor -> exercise -> lesson -> results
            await pilot.press("f5")
            await pilot.pause()
        await wait_for(pilot, lambda: checks.has_focus, 5, "the checks")
        await wait_for(pilot, lambda: results.size.height >= 12 > before, 5, "the checks to grow")
        await pilot.press("f5")
        await wait_for(pilot, lambda: screen.query_one("#editor").has_focus and results.size.height == before, 5)


async def test_at_80x24_home_rows_stay_one_line_and_progress_shows_every_column(data):
    from tutor.app.app import TutorApp, TutorOptions
    from tutor.app.screens.progress import ProgressScreen

    app = TutorApp(TutorOptions(packs=[], data_dir=str(data), builtin=True, start_kernels=False))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_ready(pilot)
        lessons = app.screen.query_one("#lessons")
        await wait_for(pilot, lambda: lessons.option_count > 10, 10, "the built-in lessons")
        await pilot.pause()
        assert lessons.virtual_size.height == lessons.option_count  # no title wraps onto a second row
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, ProgressScreen), 10, "progress")
        table = app.screen.query_one("#lesson-table")
        await wait_for(pilot, lambda: table.row_count > 10, 10, "the table")
        await pilot.pause()
        assert table.virtual_size.width <= table.scrollable_content_region.width  # nothing clipped


async def test_draft_is_saved_while_typing(pack, data):
    app = make_app(pack, data, kernels=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_first_lesson(pilot)
        await pilot.press("f7")
        await type_text(pilot, "t = 1\n")
        # debounced autosave, without leaving the exercise
        await wait_for(
            pilot,
            lambda: (d := app.store.load_draft("apptest", "basics/zeros")) is not None and d.code == "t = 1\n",
            10,
            "the autosave",
        )


def type_then(
    pack, data, tmp_path, typed: str, then: str, *, kernels: bool = False, before: str = ""
) -> subprocess.CompletedProcess:
    """In a fresh interpreter: open the first exercise, type ``typed`` over the starter,
    then run the statements ``then`` (inside the Pilot session, ``app`` and ``pilot`` in scope)."""
    script = tmp_path / "scenario.py"
    script.write_text(
        textwrap.dedent(f"""
        import asyncio, os, signal, sys
        sys.path.insert(0, {str(REPO / "tests")!r})
        from pathlib import Path
        from test_app_support import make_app, wait_for, wait_ready

        async def main():
            app = make_app(Path({str(pack)!r}), Path({str(data)!r}), kernels={kernels!r})
            {before}
            async with app.run_test(size=(120, 40)) as pilot:
                await wait_ready(pilot)
                await wait_for(pilot, lambda: app.screen.query_one("#lessons").option_count >= 3)
                await pilot.press("enter")
                await wait_for(pilot, lambda: app.screen.query_one("#editor").text.strip() != "")
                await pilot.press("f7")
                for ch in {typed!r}:
                    await pilot.press(ch)
                {then}
            print("EXITED CLEANLY")

        asyncio.run(main())
    """)
    )
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)


def saved_draft(data: Path) -> str:
    from tutor.progress import ProgressStore

    with ProgressStore.open(data) as store:
        return store.load_draft("apptest", "basics/zeros").code


def test_draft_survives_kill_9(pack, data, tmp_path):
    """A killed UI process loses at most the debounce window: the draft is in SQLite."""
    proc = type_then(
        pack,
        data,
        tmp_path,
        "t = 7",
        "await wait_for(pilot, lambda: app.store.load_draft('apptest', 'basics/zeros') is not None); "
        "os.kill(os.getpid(), signal.SIGKILL)",
    )
    assert proc.returncode == -9, proc.stderr
    assert saved_draft(data) == "t = 7"


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
def test_a_signal_saves_the_draft_before_anything(pack, data, tmp_path, signame):
    """Typed, then killed politely (SIGTERM) or the terminal closed (SIGHUP) before the
    debounce fired: the draft is saved first, and the process ends."""
    proc = type_then(
        pack,
        data,
        tmp_path,
        "t = 9",
        f"os.kill(os.getpid(), signal.{signame}); await wait_for(pilot, lambda: not app.is_running, 10)",
        before="import tutor.app.screens.lesson as lesson; lesson.DRAFT_DEBOUNCE = 3600  # only the signal can save it",
    )
    assert proc.returncode == 0, proc.stderr
    if signame == "SIGTERM":
        assert "EXITED CLEANLY" in proc.stdout  # an orderly exit, terminal restored
    assert saved_draft(data) == "t = 9"


# ---------------------------------------------------------------- trust


async def test_untrusted_pack_asks_before_running_and_remembers(pack, data):
    from tutor.app.screens.trust import TrustScreen

    app = make_app(pack, data, kernels=False, trusted=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_first_lesson(pilot)
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: isinstance(app.screen, TrustScreen), 10, "the trust question")
        await pilot.press("n")
        await wait_for(pilot, lambda: app.screen is screen, 10, "the lesson")
        assert not app.trust.is_trusted(screen.pack)
        await pilot.press("ctrl+t")
        await wait_for(pilot, lambda: isinstance(app.screen, TrustScreen), 10, "the trust question again")
        await pilot.press("y")
        await wait_for(pilot, lambda: app.trust.is_trusted(screen.pack), 10, "trust saved")
    # remembered in the data dir, keyed by the pack's content
    stored = json.loads((data / "trusted-packs.json").read_text())
    assert "apptest" in stored
    (pack / "basics" / "intuition.md").write_text("# Changed\n")
    from tutor.packs.catalog import Catalog
    from tutor.packs.trust import TrustStore

    assert not TrustStore(data).is_trusted(Catalog.load([str(pack)], builtin=False).packs[0])


# ---------------------------------------------------------------- quiz and progress


async def add_cards(pilot) -> None:
    """On home, press a: the highlighted (first) lesson's cards join the quiz."""
    app = pilot.app
    await wait_for(pilot, lambda: app.screen.query_one("#lessons").highlighted is not None, 10, "the lesson list")
    await pilot.press("a")
    await wait_for(pilot, lambda: app.store.quiz_lessons(), 10, "the lesson in the quiz")


@pytest.mark.slow
async def test_quiz_answers_every_card_type_and_schedules_them(pack, data):
    from tutor.app.screens.quiz import QuizScreen

    app = make_app(pack, data)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await add_cards(pilot)
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, QuizScreen) and app.screen.queue, 10, "the quiz")
        quiz = app.screen
        assert [r.card.type for r in quiz.queue] == ["choice", "short", "numeric", "predict", "cloze"]
        answers = ["float32", "shape", "7", "2", "float32; cpu"]
        for n, answer in enumerate(answers):
            await wait_for(pilot, lambda n=n: quiz.n == n and not quiz.answered, 30, f"card {n + 1}")
            await type_text(pilot, answer + "\n")
            await wait_for(pilot, lambda: quiz.answered, 120, f"the grade of card {n + 1}")
            feedback = str(quiz.query_one("#feedback").render())
            if quiz.queue[n].card.type == "predict":
                assert "It printed" in feedback  # the code ran after the answer was committed
            await pilot.press("enter")
        await wait_for(
            pilot,
            lambda: "Session: 5 cards, 4 right, 1 wrong" in str(quiz.query_one("#feedback").render()),
            10,
            "the summary",
        )
    from tutor.progress import ProgressStore

    with ProgressStore.open(data) as store:
        assert store.review_count() == 5
        assert store.card_state("apptest", "basics/numel").lapses == 1


async def test_new_cards_only_from_lessons_opened_or_added_and_home_says_so(pack, data):
    from tutor.app.screens.home import HomeScreen
    from tutor.app.screens.quiz import QuizScreen

    app = make_app(pack, data, kernels=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        recall = app.screen.query_one("#recall")
        await wait_for(pilot, lambda: "No cards yet." in str(recall.render()), 10, "home's recall text")
        assert "New cards come from the lessons you open." in str(recall.render())
        assert "a: add the highlighted lesson's cards" in str(recall.render())
        # the quiz has nothing to ask: no lesson was opened
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, QuizScreen), 10, "the quiz")
        await wait_for(pilot, lambda: "No recall cards are due" in markdown_text(app.screen.query_one("#card")), 10)
        assert "New cards come from the lessons you open" in markdown_text(app.screen.query_one("#card"))
        assert "(5 wait in lessons not opened yet)" in markdown_text(app.screen.query_one("#card"))
        assert app.screen.queue == []
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), 10, "home")
        # opening a lesson puts its cards in the quiz
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.store.quiz_lessons() == {("apptest", "basics"): "opened"}, 10, "the record")
        app.go_home()
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), 10, "home")
        recall = app.screen.query_one("#recall")
        await wait_for(pilot, lambda: "5 new" in str(recall.render()), 10, "the new cards")
        assert "New cards come from Tensor basics." in str(recall.render())
        assert "r: the quiz" in str(recall.render())
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, QuizScreen) and app.screen.queue, 10, "the quiz")
        assert len(app.screen.queue) == 5


async def test_home_a_adds_the_highlighted_lessons_cards(pack, data):
    app = make_app(pack, data, kernels=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await add_cards(pilot)
        assert app.store.quiz_lessons() == {("apptest", "basics"): "added"}
        recall = app.screen.query_one("#recall")
        await wait_for(pilot, lambda: "5 new" in str(recall.render()), 10, "the new cards")
        assert "New cards come from Tensor basics." in str(recall.render())


async def test_the_hint_toast_shows_plain_text_not_markdown(pack, data):
    app = make_app(pack, data, kernels=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_first_lesson(pilot)
        await pilot.press("ctrl+g")
        await wait_for(pilot, lambda: any(n.title == "Hint 1 of 3" for n in app._notifications), 10, "the hint")
        [hint] = [n for n in app._notifications if n.title == "Hint 1 of 3"]
        assert hint.message == "torch.zeros takes the shape first." and not hint.markup


async def test_an_empty_enter_in_the_quiz_is_not_graded(pack, data):
    from tutor.app.screens.quiz import EMPTY_ANSWER, QuizScreen

    app = make_app(pack, data, kernels=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await add_cards(pilot)
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, QuizScreen) and app.screen.queue, 10, "the quiz")
        quiz = app.screen
        await type_text(pilot, "  \n")
        await wait_for(pilot, lambda: EMPTY_ANSWER in str(quiz.query_one("#feedback").render()), 10, "the notice")
        assert not quiz.answered and quiz.n == 0 and quiz.wrong == 0
        assert app.store.review_count() == 0  # nothing graded, nothing scheduled
        await type_text(pilot, "float32\n")
        await wait_for(pilot, lambda: quiz.answered, 30, "the grade")
        assert quiz.right == 1 and app.store.review_count() == 1


def markdown_text(widget) -> str:
    """What a Markdown widget shows, as plain text, block by block."""
    return "\n".join(w._content.plain for w in widget.walk_children() if getattr(w, "_content", None) is not None)


async def test_choice_options_are_shuffled_and_stay_put_when_the_quiz_is_reopened(pack, data):
    from tutor.app.screens.quiz import QuizScreen
    from tutor.grading.cards import choice_order, review_seed

    app = make_app(pack, data, kernels=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await add_cards(pilot)
        shown = []
        for _ in range(2):  # open, look, leave; open again: the same order
            await pilot.press("r")
            await wait_for(pilot, lambda: isinstance(app.screen, QuizScreen) and app.screen.queue, 10, "the quiz")
            quiz = app.screen
            ref = quiz.queue[0]
            order = choice_order(ref.card, review_seed(ref.pack.id, ref.key, None))
            text = markdown_text(quiz.query_one("#card"))
            lines = [ref.card.options[i].text for i in order]  # Markdown numbers them 1, 2, ...
            assert "\n".join(lines) in text
            shown.append(lines)
            await pilot.press("escape")
            await wait_for(pilot, lambda: not isinstance(app.screen, QuizScreen), 10, "home")
        assert shown[0] == shown[1]
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, QuizScreen) and app.screen.queue, 10, "the quiz")
        quiz = app.screen
        right = shown[0].index("float32") + 1
        await type_text(pilot, f"{right}\n")
        await wait_for(pilot, lambda: quiz.answered, 10, "the grade")
        assert "Correct. Float32 is torch's default" in str(quiz.query_one("#feedback").render())


async def test_cloze_blanks_show_as_blanks_in_every_builtin_card():
    from textual.app import App
    from textual.widgets import Markdown

    from tutor.app.screens.quiz import card_markdown
    from tutor.grading.cards import cloze_blanks
    from tutor.packs.catalog import Catalog

    refs = [r for r in Catalog.load().cards() if r.card.type == "cloze"]
    assert len(refs) >= 10

    class Host(App):
        def compose(self):
            yield Markdown("", id="card")

    app = Host()
    async with app.run_test(size=(100, 30)) as pilot:
        card = app.query_one("#card", Markdown)
        for ref in refs:
            await card.update(card_markdown(ref))
            await pilot.pause()
            text = markdown_text(card)
            for n in range(1, len(cloze_blanks(ref.card)) + 1):
                assert f"[{n}]____" in text, f"{ref.key}: blank {n} is not shown in {text!r}"


async def test_choice_card_out_of_range_asks_again(pack, data):
    from tutor.app.screens.quiz import QuizScreen

    app = make_app(pack, data, kernels=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await add_cards(pilot)
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, QuizScreen) and app.screen.queue, 10, "the quiz")
        quiz = app.screen
        await type_text(pilot, "9\n")
        await wait_for(
            pilot, lambda: "Answer with the number" in str(quiz.query_one("#feedback").render()), 10, "the retry"
        )
        assert not quiz.answered


async def test_progress_screen_shows_lessons_reviews_and_forecast(pack, data):
    from tutor.app.screens.progress import ProgressScreen

    app = make_app(pack, data, kernels=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        app.store.record_attempt("apptest", "basics/zeros", passed=True, code="", content_hash="x")
        app.store.review("apptest", "basics/numel", True)
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, ProgressScreen), 10, "progress")
        table = app.screen.query_one("#lesson-table")
        await wait_for(pilot, lambda: table.row_count == 2, 10, "the table")
        assert table.get_row_at(0)[1] == "1/2"
        assert "1 reviews, 100% right" in str(app.screen.query_one("#reviews-summary").render())
        assert app.screen.query_one("#reviews-spark").data[-1] == 1


# ---------------------------------------------------------------- the rest


async def test_help_lists_every_binding(pack, data):
    from tutor.app.screens.help import HelpScreen, _sections, binding_rows

    app = make_app(pack, data, kernels=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), 10, "help")
        text = str(app.screen.query_one("#help-keys").render())
        for _, bindings in _sections(app):
            for keys, desc in binding_rows(app, bindings):
                assert desc in text and keys in text
        for needle in ("Run", "Check", "Interrupt", "Restart", "hint", "starter", "solution", "exercise", "$EDITOR"):
            assert needle in text, needle


async def test_small_terminal_gets_a_clear_message(pack, data):
    from tutor.app.screens.too_small import TooSmallScreen

    app = make_app(pack, data, kernels=False)
    async with app.run_test(size=(60, 20)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, TooSmallScreen), 10, "the message")
        assert "needs at least 80x24" in str(app.screen.query_one("#too-small").render())
        await pilot.resize_terminal(80, 24)
        await wait_for(pilot, lambda: not isinstance(app.screen, TooSmallScreen), 10, "the app back")


async def test_broken_pack_is_reported_and_the_rest_works(pack, data, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "pack.yaml").write_text("id: Broken Pack\n")
    from test_app_support import trust

    from tutor.app.app import TutorApp, TutorOptions

    trust(pack, data)
    app = TutorApp(TutorOptions(packs=[str(pack), str(broken)], data_dir=str(data), builtin=False, start_kernels=False))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        problems = app.screen.query_one("#problems")
        await wait_for(pilot, lambda: problems.display and "pack.yaml" in str(problems.render()), 10, "the problems")
        assert app.screen.query_one("#lessons").option_count >= 3


async def test_theme_toggle_is_remembered(pack, data):
    app = make_app(pack, data, kernels=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        assert app.current_theme.dark
        await pilot.press("f12")
        assert not app.current_theme.dark
        await wait_for(pilot, lambda: (data / "ui.json").exists(), 10, "the prefs file")
    app = make_app(pack, data, kernels=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        assert not app.current_theme.dark


async def test_external_editor_round_trip(pack, data, tmp_path, monkeypatch):
    import contextlib

    editor_script = tmp_path / "fake-editor.sh"
    editor_script.write_text("#!/bin/sh\nprintf 't = 123\\n' > \"$1\"\n")
    editor_script.chmod(0o755)
    monkeypatch.setenv("VISUAL", str(editor_script))
    app = make_app(pack, data, kernels=False)
    # A headless test driver cannot hand the terminal over; the round trip is what we test.
    monkeypatch.setattr(app, "suspend", contextlib.nullcontext)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_first_lesson(pilot)
        await pilot.press("ctrl+o")
        await wait_for(pilot, lambda: screen.query_one("#editor").text == "t = 123\n", 10, "the edited code")
        await wait_for(
            pilot, lambda: app.store.load_draft("apptest", "basics/zeros").code == "t = 123\n", 10, "the draft"
        )


async def test_command_palette_offers_the_main_actions(pack, data):
    from tutor.app.screens.home import HomeScreen

    app = make_app(pack, data, kernels=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_first_lesson(pilot)
        commands = {c.title: c for c in app.get_system_commands(screen)}
        for wanted in (
            "Run code",
            "Check code",
            "Next hint",
            "Interrupt",
            "Restart kernel",
            "Reset to starter",
            "Show solution",
            "Next exercise",
            "Previous exercise",
            "Open in $EDITOR",
            "Recall quiz",
            "Progress",
        ):
            assert wanted in commands
        # through the palette itself: "Home" leaves the lesson and keeps what was typed
        await pilot.press("f7")
        await type_text(pilot, "t = 5")
        await pilot.press("ctrl+p")
        await type_text(pilot, "Home")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), 10, "home")
        await wait_for(pilot, lambda: app.store.load_draft("apptest", "basics/zeros").code == "t = 5", 10, "the draft")


@pytest.mark.slow
def test_ui_process_never_imports_torch(pack, data, tmp_path):
    """Run the app through a lesson, a run, a figure and a check in a fresh interpreter: no
    torch and no matplotlib in it."""
    script = tmp_path / "no_torch.py"
    script.write_text(
        textwrap.dedent(f"""
        import asyncio, sys
        sys.path.insert(0, {str(REPO / "tests")!r})
        from pathlib import Path
        from test_app_support import make_app, wait_for, wait_ready

        async def main():
            app = make_app(Path({str(pack)!r}), Path({str(data)!r}))
            async with app.run_test(size=(120, 40)) as pilot:
                await wait_ready(pilot)
                await wait_for(pilot, lambda: app.screen.query_one("#lessons").option_count >= 3)
                await pilot.press("enter")
                await wait_for(pilot, lambda: app.screen.query_one("#editor").text.strip() != "")
                await wait_for(pilot, lambda: app.kernel_status.state == "ready", 120)
                app.screen.query_one("#editor").load_text("print('ran')\\n")
                await pilot.press("ctrl+r")
                await wait_for(pilot, lambda: "ran" in app.screen.query_one("#output").text, 60)
                # a figure drawn in the kernel arrives as a PNG; matplotlib stays in the kernel
                app.screen.query_one("#editor").load_text(
                    "import matplotlib.pyplot as plt\\nplt.plot([3, 2, 1])\\nplt.show()\\n"
                )
                await pilot.press("ctrl+r")
                await wait_for(pilot, lambda: app.screen.query_one("#figure").png is not None, 60)
                print("FIGURE_SHOWN")
                await pilot.press("ctrl+t")
                await wait_for(pilot, lambda: app.screen.query_one("#checks").verdict is not None, 120)
            print("TORCH_LOADED" if "torch" in sys.modules else "NO_TORCH")
            print("MPL_LOADED" if "matplotlib" in sys.modules else "NO_MPL")

        asyncio.run(main())
    """)
    )
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert "NO_TORCH" in proc.stdout, proc.stdout + proc.stderr
    assert "FIGURE_SHOWN" in proc.stdout and "NO_MPL" in proc.stdout, proc.stdout + proc.stderr


async def test_output_pane_joins_chunks_into_lines_and_caps_a_flood():
    from textual.app import App

    from tutor.app.widgets.output_log import MAX_PENDING_CHARS, OutputLog

    class One(App):
        def compose(self):
            yield OutputLog(id="out")

    app = One()
    async with app.run_test() as pilot:
        out = app.query_one(OutputLog)
        out.feed("ab")
        out.feed("c\nde")
        out.flush()
        assert out.lines == ["abc"]  # "de" waits for the rest of its line
        out.feed("f\n")
        out.flush()
        assert out.lines == ["abc", "def"]
        out.feed("no newline")
        out.flush(final=True)  # the end of a run shows the unfinished line
        assert out.lines[-1] == "no newline"
        out.note("A sentence from the tutor.")
        out.note("A sentence from the tutor.")  # said once
        assert out.lines.count("A sentence from the tutor.") == 1
        # more than the view can take between two flushes: counted, then said
        out.reset()
        chunk = "x" * 99 + "\n"
        for _ in range(MAX_PENDING_CHARS // len(chunk) + 50):
            out.feed(chunk)
        out.flush()
        assert "lines not shown (output too fast)" in out.lines[-1]
        await pilot.pause()


def test_only_outside_packs_with_python_need_trust(pack, tmp_path):
    from tutor.packs.catalog import Catalog
    from tutor.packs.trust import needs_trust, pack_digest

    outside = Catalog.load([str(pack)], builtin=False).packs[0]
    assert needs_trust(outside)
    # a pack of choice cards only runs no code
    cards_only = tmp_path / "cards"
    (cards_only / "quiz").mkdir(parents=True)
    (cards_only / "pack.yaml").write_text('id: cards\ntitle: Cards\nversion: "1"\nlessons: [quiz]\n')
    (cards_only / "quiz" / "lesson.yaml").write_text(
        "id: quiz\ntitle: Quiz\nintuition: Words.\ncards:\n  - id: one\n    type: short\n    prompt: Say x.\n    answers: [x]\n"
    )
    loaded = Catalog.load([str(cards_only)], builtin=False)
    assert not loaded.problems, loaded.problems
    assert not needs_trust(loaded.packs[0])
    # caches and hidden files do not change the pack's identity
    before = pack_digest(pack)
    (pack / "__pycache__").mkdir()
    (pack / "__pycache__" / "x.pyc").write_bytes(b"\0")
    (pack / ".DS_Store").write_bytes(b"\0")
    assert pack_digest(pack) == before


async def test_a_damaged_progress_file_is_moved_aside_and_the_learner_told(pack, data):
    data.mkdir(parents=True)
    (data / "progress.sqlite3").write_bytes(b"this is not a database" * 100)
    app = make_app(pack, data, kernels=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await wait_for(pilot, lambda: any("damaged" in str(n.message) for n in app._notifications), 10, "the notice")
        assert list(data.glob("progress.sqlite3.corrupt-*"))
        assert app.screen.query_one("#lessons").option_count >= 3  # and the app works


# ---------------------------------------------------------------- reading long lines, keys, pictures


async def test_output_wraps_long_lines_with_a_mark_and_rewraps_on_resize():
    from textual.app import App

    from tutor.app.widgets.output_log import CONTINUATION, OutputLog

    advice = (
        "RuntimeError: view size is not compatible with input tensor's size and stride (at least one "
        "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
    )

    class One(App):
        def compose(self):
            yield OutputLog(id="out")

    app = One()
    async with app.run_test(size=(60, 20)) as pilot:
        out = app.query_one(OutputLog)
        out.feed(advice + "\n")
        out.flush()
        await pilot.pause()
        rows = list(out.lines)
        assert len(rows) > 2 and all(r.startswith(CONTINUATION) for r in rows[1:])
        assert max(len(r) for r in rows) <= out.scrollable_content_region.width
        assert "".join(r.removeprefix(CONTINUATION) for r in rows) == advice  # nothing cut
        assert out.text == advice
        await pilot.resize_terminal(120, 20)
        await wait_for(pilot, lambda: len(out.lines) < len(rows), 10, "the rewrap")
        assert "".join(r.removeprefix(CONTINUATION) for r in out.lines) == advice


async def test_lesson_code_blocks_wrap_at_80_columns(pack, data):
    from tutor.app.widgets.output_log import CONTINUATION

    app = make_app(pack, data, kernels=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_first_lesson(pilot)
        fence = screen.query_one("#lesson-text WrappedFence")
        await wait_for(pilot, lambda: CONTINUATION in str(fence.query_one("Label").render()), 10, "a wrapped row")
        shown = str(fence.query_one("Label").render())
        # the comment at the end of the long line (the expected output) is on screen
        assert "float32 (the default)" in shown.replace(CONTINUATION, "").replace("\n", "")


async def test_escape_once_goes_home_from_the_editor(pack, data):
    from tutor.app.screens.home import HomeScreen

    app = make_app(pack, data, kernels=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_first_lesson(pilot)
        assert screen.query_one("#editor").has_focus
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), 10, "home after one escape")


async def test_help_keeps_keys_and_descriptions_apart_and_lists_select_all(pack, data):
    from tutor.app.screens.help import help_content, help_sections

    app = make_app(pack, data, kernels=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        text = help_content(app).plain
        assert "f7" in text and "select all" in text
        for _, rows in help_sections(app):
            for keys, desc in rows:
                assert f"{keys}{desc}" not in text and f"{keys} {desc}" not in text, keys
        assert "f6" in text and "ctrl+b" not in text


async def test_palette_opens_an_exercise_by_name_and_passed_ones_are_marked(pack, data):
    from tutor.app.screens.lesson import LessonScreen

    app = make_app(pack, data, kernels=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        app.store.record_attempt("apptest", "basics/zeros", passed=True, code="", content_hash="x")
        await pilot.press("ctrl+p")
        await type_text(pilot, "Double it")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, LessonScreen), 10, "the lesson")
        screen = app.screen
        await wait_for(pilot, lambda: screen.ref.exercise.id == "double" and screen._editing is not None, 10, "it")
        source = screen.query_one("#exercise-text").source
        assert "Exercises: ✓1  ▸2" in source  # the first one passed, this is the second
        await pilot.press("f3")
        await wait_for(pilot, lambda: "passed ✓" in screen.query_one("#exercise-text").source, 10, "the mark")

        # from a lesson, the palette opens another lesson (and the draft is kept)
        await pilot.press("ctrl+p")
        await type_text(pilot, "Lesson: Reading only")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(
            pilot, lambda: isinstance(app.screen, LessonScreen) and app.screen.lesson.id == "reading", 10, "reading"
        )
        assert len(app.screen_stack) == 3  # default, home, this lesson: nothing piles up


async def test_palette_lists_passed_exercises_with_a_mark(pack, data):
    from tutor.app.palette import palette_entries

    app = make_app(pack, data, kernels=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        app.store.record_attempt("apptest", "basics/zeros", passed=True, code="", content_hash="x")
        texts = [t for t, _, _ in palette_entries(app.catalog, app.store.exercise_stats())]
        assert "Exercise: A matrix of zeros ✓" in texts and "Exercise: Double it" in texts
        assert "Lesson: Tensor basics" in texts


async def test_progress_charts_due_cards_for_two_weeks_and_recall_rate(pack, data):
    from tutor.app.screens.progress import FORECAST_DAYS, gather

    app = make_app(pack, data, kernels=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        app.store.review("apptest", "basics/numel", True)
        app.store.review("apptest", "basics/shape-word", False)
        data_ = gather(app)
        assert FORECAST_DAYS == 14 and len(data_.forecast) == FORECAST_DAYS + 1  # now, later today, 13 days
        assert [label for label, _ in data_.forecast[:3]] == ["now", "later today", "tomorrow"]
        assert sum(n for _, n in data_.forecast) == 2  # both cards fall due within two weeks
        assert data_.recall_rate[-1] == ("this week", 50, 2)
        await pilot.press("p")
        chart = await _wait_query(pilot, "#recall-rate")
        await wait_for(pilot, lambda: "50% of 2" in str(chart.render()), 10, "the recall chart")
        assert "in 13 days" in str(app.screen.query_one("#forecast").render())


async def test_home_due_count_is_progress_now(pack, data):
    from datetime import datetime, timedelta, timezone

    from tutor.app.screens.progress import ProgressScreen
    from tutor.progress import ProgressStore

    two_days_ago = datetime.now(timezone.utc) - timedelta(days=2)
    with ProgressStore.open(data) as store:
        store.review("apptest", "basics/numel", False, two_days_ago)
        store.review("apptest", "basics/shape-word", False, two_days_ago)
        store.review("apptest", "basics/default-dtype", False)  # due again in minutes: later today
        store.review("gone-pack", "lesson/card", False, two_days_ago)  # a pack not loaded now
    app = make_app(pack, data, kernels=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await wait_for(pilot, lambda: "2 cards due now" in str(app.screen.query_one("#recall").render()), 10, "home")
        await pilot.press("p")
        chart = await _wait_query(pilot, "#forecast")
        await wait_for(pilot, lambda: "now" in str(chart.render()), 10, "the forecast")
        assert isinstance(app.screen, ProgressScreen)
        from tutor.app.screens.progress import gather

        forecast = gather(app).forecast
        assert forecast[0] == ("now", 2) and sum(n for _, n in forecast[1:]) == 1  # later today (or tomorrow)


async def _wait_query(pilot, selector):
    app = pilot.app
    await wait_for(pilot, lambda: app.screen.query_one(selector) is not None, 10, selector)
    return app.screen.query_one(selector)


@pytest.mark.slow
async def test_a_long_check_shows_time_and_output_and_can_be_stopped(pack, data):
    app = make_app(pack, data)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_first_lesson(pilot)
        await wait_for(pilot, lambda: app.kernel_status.state == "ready", 120, "the kernel")
        screen.query_one("#editor").load_text(
            "import time\nfor epoch in range(1000):\n    print(f'epoch {epoch}', flush=True)\n    time.sleep(1)\n"
        )
        await pilot.press("ctrl+t")
        checks = screen.query_one("#checks")
        panel = lambda: str(checks.query_one("#verdict").render())  # noqa: E731
        # the learner's output arrives while the check runs, and the clock moves
        await wait_for(pilot, lambda: "epoch 1" in panel(), 120, "streamed output")
        seconds = lambda: int(re.search(r"kernel… (\d+) s", panel()).group(1))  # noqa: E731
        first = seconds()
        await wait_for(pilot, lambda: seconds() > first, 30, "the elapsed time to move")
        assert "f6 or ctrl+c stops the check" in panel()
        await pilot.press("ctrl+c")  # the editor has the focus: ctrl+c stops the check
        await wait_for(pilot, lambda: "Check stopped" in panel(), 30, "the stop")
        assert checks.verdict is None
        assert app.store.exercise_stats("apptest").get(("apptest", "basics/zeros")) is None  # nothing recorded
        # ctrl+t while a check runs starts it again; the Stop key then stops the new one
        await pilot.press("ctrl+t")
        await wait_for(pilot, lambda: "Checking your code" in panel(), 30, "the second check")
        await pilot.press("ctrl+t")
        await wait_for(pilot, lambda: "epoch 1" in panel(), 120, "the third check's output")
        await pilot.press("f6")
        await wait_for(pilot, lambda: "Check stopped" in panel(), 30, "the stop of the newest check")
        await wait_for(pilot, lambda: screen._check_worker is None, 30, "no check running")
        # a check after that works as usual
        screen.query_one("#editor").load_text(
            "import torch\nt = torch.zeros(2, 3, dtype=torch.float64, device=DEVICE)\n"
        )
        await pilot.press("ctrl+t")
        await wait_for(pilot, lambda: checks.verdict is not None, 120, "the verdict")
        assert checks.verdict.passed


def test_figures_keep_their_proportions_in_any_box():
    from tutor.app.widgets.figure import fit

    # 640x480 with cells twice as tall as wide: 40 columns need 15 rows
    assert fit((640, 480), 40, 30) == (40, 15)
    # a box too short: the height decides, the width shrinks to match
    assert fit((640, 480), 100, 20) == (53, 20)
    assert fit((0, 0), 10, 5) == (10, 5)


def test_the_terminal_is_asked_about_graphics_only_where_it_may_have_them():
    from tutor.app.widgets.figure import terminal_may_draw_images as may

    assert may({"TERM": "xterm-kitty"}) and may({"TERM_PROGRAM": "WezTerm", "TERM": "xterm-256color"})
    assert not may({"TERM": "xterm-256color"})  # plain xterm: half blocks, no question asked
    assert not may({"TERM": "xterm-kitty", "TMUX": "/tmp/tmux-0/default,1,0"})  # tmux: half blocks
    assert may({"TERM": "screen", "PTFUND_TUTOR_IMAGES": "detect"})
    assert not may({"TERM": "xterm-kitty", "PTFUND_TUTOR_IMAGES": "blocks"})


async def test_a_figure_shows_as_half_blocks_without_asking_the_terminal():
    import base64
    import io

    from PIL import Image as PILImage
    from textual.app import App

    from tutor.app.widgets.figure import FigurePane

    buf = io.BytesIO()
    PILImage.new("RGB", (64, 48), (200, 30, 30)).save(buf, format="PNG")

    class One(App):
        def compose(self):
            yield FigurePane(id="figure")

    app = One()
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.query_one(FigurePane)
        await pane.show(base64.b64encode(buf.getvalue()).decode(), 1)
        await pilot.pause()
        image = pane.query_one(".figure-image")
        assert type(image).__name__ == "HalfcellImage"
        await wait_for(pilot, lambda: image.size.width > 0 and image.size.height > 0, 10, "the image laid out")
        await pane.show("not base64 png", 2)  # a broken bundle: a sentence, never a traceback
        await pilot.pause()
