"""The lesson screen: read, write code, run it in the live kernel, check it in a fresh one.

The learner's code is a draft saved as they type (debounced), when they leave the
exercise and when the app quits, so nothing typed is lost.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from typing import TYPE_CHECKING

from textual import on, work
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.timer import Timer
from textual.widgets import Footer, Input, TabbedContent, TabPane
from textual.widgets.text_area import Document
from textual.worker import Worker, get_current_worker

from tutor.app.external_editor import edit_externally
from tutor.app.kernels import KernelUnavailable
from tutor.app.screens.base import TutorScreen
from tutor.app.widgets.check_results import CheckResults
from tutor.app.widgets.code_editor import CodeEditor
from tutor.app.widgets.figure import FigurePane, FigureScreen
from tutor.app.widgets.lesson_markdown import LessonMarkdown as Markdown
from tutor.app.widgets.output_log import OutputLog
from tutor.app.widgets.repl import Repl
from tutor.app.widgets.top_bar import TopBar
from tutor.errors import TutorError
from tutor.grading.code_size import code_size, too_large
from tutor.packs.catalog import ExerciseRef
from tutor.packs.plain_text import inline_to_text

if TYPE_CHECKING:
    from tutor.app.kernels import Kernels
    from tutor.engine.events import OutputEvent, RunResult
    from tutor.packs import models as m
    from tutor.packs.loader import Pack
    from tutor.progress.records import Draft, ExerciseStats
    from tutor.progress.store import ProgressStore

DRAFT_DEBOUNCE = 0.5  # seconds after the last keystroke
CHECK_TICK = 0.5  # how often a running check's elapsed time and output are redrawn


def exercise_list(lesson: m.Lesson, index: int, passed: set[str]) -> str:
    """One line naming every exercise of the lesson: ✓ passed, ▸ this one."""
    marks = []
    for n, ex in enumerate(lesson.exercises):
        mark = "✓" if ex.id in passed else ""
        here = "▸" if n == index else ""
        marks.append(f"{here}{mark}{n + 1}")
    return "Exercises: " + "  ".join(marks)


def exercise_markdown(
    ref: ExerciseRef, index: int, total: int, hints_shown: int, passed: set[str] | None = None
) -> str:
    ex = ref.exercise
    passed = passed or set()
    status = " · passed ✓" if ex.id in passed else ""
    parts = [f"## {ex.title}", f"*Exercise {index + 1} of {total}{status}*"]
    if total > 1:
        parts += ["", exercise_list(ref.lesson, index, passed)]
    parts += ["", ex.prompt.strip()]
    if ex.setup_visible and ex.shown_setup.strip():
        parts += ["", "Already run before your code:", "", "```python", ex.shown_setup.rstrip(), "```"]
    for n in range(min(hints_shown, len(ex.hints))):
        parts += ["", f"**Hint {n + 1} of {len(ex.hints)}.** {ex.hints[n].strip()}"]
    if ex.hints and hints_shown < len(ex.hints):
        parts += ["", f"*{len(ex.hints) - hints_shown} hint(s) left: ctrl+g.*"]
    return "\n".join(parts)


class LessonScreen(TutorScreen):
    BINDINGS = [
        Binding("ctrl+r", "run", "Run", tooltip="Run the code in the live kernel", id="lesson.run"),
        Binding("ctrl+t", "check", "Check", tooltip="Check the code in a fresh kernel", id="lesson.check"),
        Binding("ctrl+g", "hint", "Hint", tooltip="Reveal the next hint", id="lesson.hint"),
        # f6, not ctrl+b or ctrl+a: those are tmux's and screen's prefix keys. A priority
        # binding, or the editor's own f6 (select line) would take it first.
        Binding(
            "f6",
            "interrupt",
            "Stop",
            tooltip="Interrupt the running code or stop the check (ctrl+c too, while something runs)",
            id="lesson.interrupt",
            priority=True,
        ),
        Binding("f8", "restart", "Restart", tooltip="Restart the kernel (clears variables)", id="lesson.restart"),
        Binding("f9", "reset", "Reset", tooltip="Reset the editor to the starter code", id="lesson.reset"),
        Binding("f2", "solution", "Solution", tooltip="Show the reference solution", id="lesson.solution"),
        Binding("f3", "previous", "Prev", tooltip="Previous exercise", id="lesson.previous"),
        Binding("f4,ctrl+n", "next", "Next", tooltip="Next exercise", id="lesson.next"),
        Binding("ctrl+o", "external_editor", "$EDITOR", tooltip="Edit the code in $EDITOR", id="lesson.editor"),
        Binding(
            "f5",
            "focus_reading",
            "Read",
            tooltip="Cycle editor, exercise text, lesson text, results (arrows and page keys scroll them)",
            id="lesson.read",
        ),
        Binding(
            "ctrl+l",
            "focus_repl",
            "REPL",
            show=False,
            tooltip="Move between the editor and the scratch REPL",
            id="lesson.repl",
        ),
        Binding(
            "ctrl+@,ctrl+space",
            "complete",
            "Complete",
            show=False,
            tooltip="Complete the name at the cursor (kernel)",
            id="lesson.complete",
        ),
        Binding("escape", "home", "Home", tooltip="Back to the home screen", id="lesson.home"),
        # ctrl+c stops running code; while nothing runs it stays the editor's copy key.
        Binding("ctrl+c", "interrupt_busy", show=False, priority=True, id="lesson.interrupt-ctrl-c"),
        # The same keys, never shown: they keep working while the footer hides the above.
        Binding("f3", "narrow('previous')", show=False),
        Binding("ctrl+o", "narrow('external_editor')", show=False),
        Binding("f9", "narrow('reset')", show=False),
        Binding("f8", "narrow('restart')", show=False),
        Binding("f5", "narrow('focus_reading')", show=False),
    ]
    # Shown in the footer only when the terminal is wide enough; help (f1) lists them all.
    WIDE_ONLY = {"previous", "external_editor", "reset", "restart", "focus_reading"}
    WIDE = 110

    def __init__(self, pack: Pack, lesson: m.Lesson, exercise_id: str | None = None) -> None:
        super().__init__()
        self.pack = pack
        self.lesson = lesson
        ids = [e.id for e in lesson.exercises]
        self.index = ids.index(exercise_id) if exercise_id in ids else 0
        self._saved_text: str | None = None  # what the store holds for the code in the editor
        self._editing: ExerciseRef | None = None  # whose code is in the editor (None while loading)
        self._save_timer: Timer | None = None
        self._hints_shown = 0
        self._passed = False
        self._setup_done: tuple[int, str] | None = None  # (kernel generation, exercise key)
        self._passed_ids: set[str] = set()  # exercises of this lesson passed before
        self._check_worker: Worker | None = None  # the check running, if any

    # ------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        yield TopBar(self._where())
        with Horizontal(id="lesson"):
            with TabbedContent(id="reading", initial="tab-exercise"):
                with TabPane("Exercise", id="tab-exercise"), VerticalScroll(id="exercise-scroll"):
                    yield Markdown("", id="exercise-text")
                with TabPane("Lesson", id="tab-lesson"), VerticalScroll(id="lesson-scroll"):
                    yield Markdown(self.lesson.intuition, id="lesson-text")
            with Vertical(id="work"):
                yield CodeEditor(id="editor")
                with TabbedContent(id="results", initial="tab-output"):
                    with TabPane("Output", id="tab-output"), Horizontal(id="output-row"):
                        yield OutputLog(id="output")
                        yield FigurePane(id="figure")
                    with TabPane("Checks", id="tab-checks"):
                        yield CheckResults(id="checks")
                yield Repl(id="repl")
        yield Footer(compact=True)

    @property
    def ref(self) -> ExerciseRef | None:
        if not self.lesson.exercises:
            return None
        return ExerciseRef(self.pack, self.lesson, self.lesson.exercises[self.index])

    def _where(self) -> str:
        where = f"{self.lesson.title}"
        if self.lesson.exercises:
            ex = self.lesson.exercises[self.index]
            where += f" › {self.index + 1}/{len(self.lesson.exercises)} {ex.title}"
        return where

    def on_mount(self) -> None:
        self.app.note_lesson_opened(self.pack.id, self.lesson.id)
        self.load_exercise()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "interrupt_busy":
            return self._something_runs()  # False lets ctrl+c through to the focused widget (copy)
        # Hidden from the footer when narrow; the "narrow" bindings keep the key working.
        return not (action in self.WIDE_ONLY and self.app.size.width < self.WIDE)

    def on_resize(self) -> None:
        self.refresh_bindings()

    async def action_narrow(self, action: str) -> None:
        # Called directly: run_action would consult check_action and refuse.
        result = getattr(self, f"action_{action}")()
        if inspect.isawaitable(result):
            await result

    # ------------------------------------------------------------ loading an exercise

    @work(group="exercise", exclusive=True, exit_on_error=False)
    async def load_exercise(self) -> None:
        app = self.app
        ref = self.ref
        editor = self.query_one("#editor", CodeEditor)
        self.query_one(TopBar).set_where(self._where())
        self.query_one("#output", OutputLog).reset()
        self.run_worker(self.query_one("#figure", FigurePane).clear(), group="figure", exit_on_error=False)
        self.query_one("#checks", CheckResults).show_message("Press ctrl+t to check your code against the exercise.")
        self._setup_done = None
        # Until the new code is in, edits would land on the wrong exercise: none are taken.
        self._editing = None
        editor.read_only = True
        if ref is None:
            editor.load_text("# This lesson has no exercises: read it in the Lesson tab.\n")
            self.query_one("#reading", TabbedContent).active = "tab-lesson"
            self.query_one("#exercise-text", Markdown).update("This lesson has no exercises.")
            if app.store is not None:
                await asyncio.to_thread(app.store.set_position, self.pack.id, self.lesson.id, None)
            return
        store = app.store
        assert store is not None  # a lesson opens only once the store is loaded
        draft, hints, stats, passed_ids = await asyncio.to_thread(self._read_progress, store, ref)
        if ref != self.ref:  # moved on while reading
            return
        self._hints_shown = hints
        self._passed = bool(stats and stats.passed)
        self._passed_ids = passed_ids
        if self.index == 0 and draft is None and stats is None:
            # A lesson not yet started opens on its intuition: the idea before the exercises.
            self.query_one("#reading", TabbedContent).active = "tab-lesson"
        text = draft.code if draft is not None else ref.exercise.starter
        if draft is not None and (problem := too_large(code_size(text), "Your saved code")) is not None:
            # e.g. from an imported progress file: loading it would stall the editor
            self.notify(f"{problem}: the starter is shown instead.", severity="warning", timeout=10)
            text = ref.exercise.starter
        editor.load_text(text)
        self._saved_text = text
        self._editing = ref
        editor.read_only = False
        editor.focus()
        self._show_exercise_text()
        if draft is not None and draft.content_hash and draft.content_hash != ref.content_hash:
            self.notify("This exercise changed since you last worked on it; your code is kept.", timeout=8)
        if self._passed:
            self.query_one("#checks", CheckResults).show_message(
                "You passed this exercise before. ctrl+t checks again.", "$text-success"
            )
        await asyncio.to_thread(store.set_position, self.pack.id, self.lesson.id, ref.exercise.id)

    @staticmethod
    def _read_progress(
        store: ProgressStore, ref: ExerciseRef
    ) -> tuple[Draft | None, int, ExerciseStats | None, set[str]]:
        draft = store.load_draft(ref.pack.id, ref.key)
        hints = store.hints_used(ref.pack.id, ref.key)
        all_stats = store.exercise_stats(ref.pack.id)
        stats = all_stats.get((ref.pack.id, ref.key))
        passed_ids = {
            ex.id
            for ex in ref.lesson.exercises
            if getattr(all_stats.get((ref.pack.id, f"{ref.lesson.id}/{ex.id}")), "passed", False)
        }
        return draft, hints, stats, passed_ids

    def _show_exercise_text(self) -> None:
        ref = self.ref
        if ref is None:
            return
        self.query_one("#exercise-text", Markdown).update(
            exercise_markdown(ref, self.index, len(self.lesson.exercises), self._hints_shown, self._passed_ids)
        )

    # ------------------------------------------------------------ drafts

    @on(CodeEditor.Changed, "#editor")
    def _editor_changed(self) -> None:
        if self._editing is None:
            return
        if self._save_timer is not None:
            self._save_timer.stop()
        self._save_timer = self.set_timer(DRAFT_DEBOUNCE, self._save_soon)

    def _save_soon(self) -> None:
        self.run_worker(self.save_draft(), group="draft", exit_on_error=False)

    async def save_draft(self) -> None:
        """Save the editor's code if it differs from what is stored (safe to call often)."""
        if self._save_timer is not None:
            self._save_timer.stop()
            self._save_timer = None
        ref = self._editing
        if ref is None or self.app.store is None:
            return
        text = self.query_one("#editor", CodeEditor).text
        if text == self._saved_text:
            return
        self._saved_text = text
        try:
            await asyncio.to_thread(
                self.app.store.save_draft, ref.pack.id, ref.key, text, content_hash=ref.content_hash
            )
        except Exception as exc:
            self._saved_text = None  # try again on the next change
            self.notify(f"Could not save your code: {exc}", severity="error")

    def save_draft_now(self) -> None:
        """The same, blocking, for a signal handler that cannot wait for the event loop."""
        ref, store = self._editing, self.app.store
        if ref is None or store is None:
            return
        text = self.query_one("#editor", CodeEditor).text
        if text != self._saved_text:
            store.save_draft(ref.pack.id, ref.key, text, content_hash=ref.content_hash)
            self._saved_text = text

    async def on_screen_suspend(self) -> None:
        await self.save_draft()

    # ------------------------------------------------------------ trust and kernel

    async def _may_run(self) -> bool:
        """Pack code runs only once the learner trusts a non-built-in pack."""
        app = self.app
        if app.trust is None or await asyncio.to_thread(app.trust.is_trusted, self.pack):
            return True
        from tutor.app.screens.trust import TrustScreen

        if await app.push_screen_wait(TrustScreen(self.pack)):
            await asyncio.to_thread(app.trust.trust, self.pack)
            return True
        self.notify(f"Nothing was run: pack '{self.pack.id}' is not trusted.", severity="warning")
        return False

    def _kernels(self):
        kernels = self.app.kernels
        if kernels is None:
            self.notify("Kernels are not running yet; try again in a moment.", severity="warning")
        return kernels

    def _show_event(self, event: OutputEvent) -> None:
        self.query_one("#output", OutputLog).show_event(event)

    @on(OutputLog.FigureShown)
    async def _figure_shown(self, event: OutputLog.FigureShown) -> None:
        await self.query_one("#figure", FigurePane).show(event.png, event.number)

    def action_enlarge_figure(self) -> None:
        pane = self.query_one("#figure", FigurePane)
        if pane.png is None:
            self.notify("No figure yet: code that draws with matplotlib shows its figure beside the output.")
            return
        self.app.push_screen(FigureScreen(pane.png, pane.number))

    async def _ensure_setup(self, kernels: Kernels, ref: ExerciseRef) -> bool:
        """Run the exercise's setup in the live kernel once per kernel and exercise."""
        key = (kernels.generation, ref.qualified)
        if self._setup_done == key:
            return True
        result = await kernels.prepare(ref.exercise)
        if result is not None and not result.ok:
            out = self.query_one("#output", OutputLog)
            out.note("The exercise's setup code failed in the live kernel (tell the pack's author):")
            if result.error is not None:
                out.feed("\n".join(result.error.traceback) + "\n")
            elif result.message:
                out.note(result.message)
            return False
        self._setup_done = (kernels.generation, ref.qualified)
        return True

    # ------------------------------------------------------------ run and check

    async def _ready_to_run(self, ref: ExerciseRef | None) -> Kernels | None:
        """The kernels to run or check with, once the pack is trusted and the draft saved;
        None when there is nothing to run or no way to run it."""
        if ref is None or not await self._may_run():
            return None
        kernels = self._kernels()
        if kernels is None:
            return None
        await self.save_draft()
        return kernels

    @work(group="run", exclusive=False, exit_on_error=False)
    async def action_run(self) -> None:
        ref = self.ref
        if self._too_large("run"):
            return
        kernels = await self._ready_to_run(ref)
        if kernels is None or ref is None:
            return
        out = self.query_one("#output", OutputLog)
        self.query_one("#results", TabbedContent).active = "tab-output"
        if kernels.busy:
            self.notify("The kernel is still running your last code (f6 or ctrl+c stops it).", severity="warning")
            return
        out.reset()
        await self.query_one("#figure", FigurePane).clear()
        if self.app.kernel_status.state in ("starting", "restarting"):
            out.note("Waiting for the kernel to start (it imports torch)…")
        if not await self._ensure_setup(kernels, ref):
            return
        code = self.query_one("#editor", CodeEditor).text
        result = await kernels.run(code, on_event=self._show_event)
        self._after_run(result)

    def _too_large(self, what: str) -> bool:
        """Code over the size bound is refused with a sentence where the result would show."""
        problem = too_large(code_size(self.query_one("#editor", CodeEditor).text), "Your code")
        if problem is None:
            return False
        sentence = f"{problem}: it was not {what}."
        if what == "run":
            self.query_one("#results", TabbedContent).active = "tab-output"
            self.query_one("#output", OutputLog).note(sentence)
        else:
            self.query_one("#results", TabbedContent).active = "tab-checks"
            self.query_one("#checks", CheckResults).show_message(sentence, "$text-error")
        return True

    def _after_run(self, result: RunResult, quiet: bool = False) -> None:
        out = self.query_one("#output", OutputLog)
        out.flush(final=True)
        if result.message:  # one sentence: interrupted, restarted, output capped, a known error
            out.note(result.message)
        elif not quiet and result.ok and not result.output and result.result_text is None and not result.displays:
            out.note("(ran; nothing printed)")

    @work(group="check", exclusive=True, exit_on_error=False)
    async def action_check(self) -> None:
        ref = self.ref
        if self._too_large("checked"):
            return
        kernels = await self._ready_to_run(ref)
        if kernels is None or ref is None:
            return
        code = self.query_one("#editor", CodeEditor).text
        checks = self.query_one("#checks", CheckResults)
        self.query_one("#results", TabbedContent).active = "tab-checks"
        # Elapsed time and the learner's own output, live: a capstone takes tens of seconds.
        checks.start_progress(time.monotonic())
        ticker = self.set_interval(CHECK_TICK, checks.tick, name="check-tick")
        self._check_worker = worker = get_current_worker()
        try:
            verdict = await kernels.verify(ref.exercise, code, on_output=checks.feed)
        except KernelUnavailable as exc:
            checks.show_message(str(exc), "$text-error")
            return
        except asyncio.CancelledError:
            # Stopped by the learner: the kernel is thrown away, nothing is recorded.
            checks.show_message("Check stopped; nothing was recorded. ctrl+t checks again.", "$text-warning")
            raise
        finally:
            ticker.stop()
            if self._check_worker is worker:  # a newer check (ctrl+t again) replaces this one
                self._check_worker = None
        here = ref == self.ref
        if here:
            checks.show_verdict(verdict)  # before recording: the learner waits for this, not for the disk
        if (
            self.app.store is not None and verdict.status != "authoring-error"
        ):  # an attempt, even if the learner moved on
            await asyncio.to_thread(
                self.app.store.record_attempt,
                ref.pack.id,
                ref.key,
                passed=verdict.passed,
                code=code,
                content_hash=ref.content_hash,
            )
        if not here:
            return
        if verdict.passed:
            self._passed = True
            if ref.exercise.id not in self._passed_ids:
                self._passed_ids = self._passed_ids | {ref.exercise.id}
                self._show_exercise_text()
            last = self.index + 1 >= len(self.lesson.exercises)
            follow = (
                "That was the lesson's last exercise: f4 goes on to the next lesson."
                if last
                else "f4 for the next exercise."
            )
            self.notify(f"Passed! {follow}", title=ref.exercise.title, timeout=6)

    def _something_runs(self) -> bool:
        kernels = self.app.kernels
        return self._check_worker is not None or (kernels is not None and kernels.busy)

    async def action_interrupt(self) -> None:
        if self._check_worker is not None:
            self._check_worker.cancel()  # the verification kernel is shut down with it
        kernels = self.app.kernels
        if kernels is not None and kernels.busy:
            await kernels.interrupt()
        elif self._check_worker is None:
            self.notify("Nothing is running.")

    async def action_interrupt_busy(self) -> None:
        await self.action_interrupt()

    @work(group="restart", exclusive=True, exit_on_error=False)
    async def action_restart(self) -> None:
        kernels = self._kernels()
        if kernels is None:
            return
        out = self.query_one("#output", OutputLog)
        out.note("Restarting the kernel: your variables are cleared, your code is kept.")
        await kernels.restart()
        self._setup_done = None

    # ------------------------------------------------------------ hints, reset, solution

    def action_hint(self) -> None:
        ref = self.ref
        if ref is None:
            return
        hints = ref.exercise.hints
        if not hints:
            self.notify("This exercise has no hints.")
            return
        if self._hints_shown >= len(hints):
            self.notify(f"That was the last hint ({len(hints)} of {len(hints)}). f2 shows the solution.")
            return
        n = self._hints_shown
        self._hints_shown += 1
        self.query_one("#reading", TabbedContent).active = "tab-exercise"
        self._show_exercise_text()
        # A toast shows plain text: the hint's Markdown (backticks, asterisks) would show raw.
        self.notify(inline_to_text(hints[n]), title=f"Hint {n + 1} of {len(hints)}", timeout=10, markup=False)
        store = self.app.store
        if store is None:
            return
        self.run_worker(
            asyncio.to_thread(store.record_hint, ref.pack.id, ref.key, n, content_hash=ref.content_hash),
            group="hint",
            exit_on_error=False,
        )

    def action_reset(self) -> None:
        ref = self.ref
        if ref is None:
            return
        editor = self.query_one("#editor", CodeEditor)
        # An edit, not load_text: ctrl+z brings the learner's code back.
        editor.replace(ref.exercise.starter, editor.document.start, editor.document.end)
        editor.focus()
        self.notify("Back to the starter code (ctrl+z undoes).")

    @work(group="solution", exclusive=True, exit_on_error=False)
    async def action_solution(self) -> None:
        ref = self.ref
        if ref is None:
            return
        from tutor.app.screens.confirm import ConfirmScreen
        from tutor.app.screens.solution import SolutionScreen

        if not self._passed:
            sure = await self.app.push_screen_wait(
                ConfirmScreen(
                    "Show the solution?",
                    "You have not passed this exercise yet. A hint (ctrl+g) may be enough, "
                    "and working it out yourself is what makes it stick.",
                    yes="Show it",
                    no="Keep trying",
                )
            )
            if not sure:
                return
        use = await self.app.push_screen_wait(SolutionScreen(ref.exercise.title, ref.exercise.solution))
        if use:
            editor = self.query_one("#editor", CodeEditor)
            editor.replace(ref.exercise.solution, editor.document.start, editor.document.end)
            self.notify("The solution is in the editor (ctrl+z undoes).")

    # ------------------------------------------------------------ moving between exercises

    async def _go(self, step: int) -> None:
        await self.save_draft()
        n = len(self.lesson.exercises)
        target = self.index + step
        if 0 <= target < n:
            self.index = target
            self.load_exercise()
            return
        catalog = self.app.catalog
        assert catalog is not None  # a lesson is open, so the packs are loaded
        other = catalog.neighbour(self.pack.id, self.lesson.id, 1 if step > 0 else -1)
        if other is None:
            self.notify("That was the last lesson of the pack." if step > 0 else "This is the first exercise.")
            return
        try:
            self.pack, self.lesson = await asyncio.to_thread(catalog.load_lesson, self.pack.id, other)
        except TutorError as exc:  # a lesson with problems: this one stays open
            self.app.cannot_open(exc)
            return
        self.index = 0 if step > 0 else max(0, len(self.lesson.exercises) - 1)
        self.query_one("#lesson-text", Markdown).update(self.lesson.intuition)
        self.query_one("#reading", TabbedContent).active = "tab-lesson" if step > 0 else "tab-exercise"
        self.notify(f"Lesson: {self.lesson.title}")
        self.load_exercise()

    async def action_next(self) -> None:
        await self._go(1)

    async def action_previous(self) -> None:
        await self._go(-1)

    async def action_home(self) -> None:
        await self.save_draft()
        self.app.pop_screen()

    def action_focus_reading(self) -> None:
        """editor -> exercise text -> lesson text -> results (checks or output) -> editor:
        each scrolls from the keyboard, and the results grow while they have the focus."""
        reading = self.query_one("#reading", TabbedContent)
        exercise, lesson = self.query_one("#exercise-scroll"), self.query_one("#lesson-scroll")
        results = self.query_one("#results", TabbedContent)
        if exercise.has_focus:
            reading.active = "tab-lesson"
            self.call_after_refresh(lesson.focus)
        elif lesson.has_focus:
            shown = "#checks" if results.active == "tab-checks" else "#output"
            self.query_one(shown).focus()
        elif results.has_focus_within:
            self.query_one("#editor", CodeEditor).focus()
        else:
            reading.active = "tab-exercise"
            self.call_after_refresh(exercise.focus)

    def action_focus_repl(self) -> None:
        repl = self.query_one("#repl", Repl)
        if repl.has_focus:
            self.query_one("#editor", CodeEditor).focus()
        else:
            repl.focus()

    # ------------------------------------------------------------ $EDITOR

    async def action_external_editor(self) -> None:
        ref = self.ref
        if ref is None:
            return
        await self.save_draft()
        editor = self.query_one("#editor", CodeEditor)
        text = edit_externally(self.app, editor.text, f"{ref.exercise.id}.py")
        if text is not None and text != editor.text:
            editor.replace(text, editor.document.start, editor.document.end)
            await self.save_draft()

    # ------------------------------------------------------------ REPL and completion

    @on(Input.Submitted, "#repl")
    def _repl_submitted(self, event: Input.Submitted) -> None:
        line = event.value
        if not line.strip():
            return
        repl = self.query_one("#repl", Repl)
        repl.remember(line)
        repl.value = ""
        self.run_repl(line)

    @work(group="run", exit_on_error=False)
    async def run_repl(self, line: str) -> None:
        ref = self.ref
        if ref is not None and not await self._may_run():
            return
        kernels = self._kernels()
        if kernels is None:
            return
        out = self.query_one("#output", OutputLog)
        self.query_one("#results", TabbedContent).active = "tab-output"
        if kernels.busy:
            self.notify("The kernel is busy (f6 or ctrl+c stops it).", severity="warning")
            return
        if ref is not None and not await self._ensure_setup(kernels, ref):
            return
        out.note(f">>> {line}")
        result = await kernels.run(line, on_event=self._show_event)
        self._after_run(result, quiet=True)

    @on(Repl.CompletionRequested)
    def _repl_complete(self, event: Repl.CompletionRequested) -> None:
        self.complete_in(event.repl, event.code, event.cursor)

    def action_complete(self) -> None:
        editor = self.query_one("#editor", CodeEditor)
        if not editor.has_focus:
            return
        document = editor.document
        assert isinstance(document, Document)  # a Python TextArea's document has offsets
        offset = document.get_index_from_location(editor.cursor_location)
        self.complete_in(editor, editor.text, offset)

    @work(group="complete", exclusive=True, exit_on_error=False)
    async def complete_in(self, widget: CodeEditor | Repl, code: str, cursor: int) -> None:
        kernels = self.app.kernels
        if kernels is None or kernels.busy:
            return
        matches, start, end = await kernels.complete(code, cursor)
        if not matches:
            return
        shown = widget.apply_completion(matches, start, end)
        if shown:
            self.notify(shown, title="Completions", timeout=4)

    # ------------------------------------------------------------ command palette

    def palette_commands(self):
        for title, help, action in (
            ("Run code", "Run the editor's code in the live kernel (ctrl+r)", self.action_run),
            (
                "Check code",
                "Verify the code in a fresh kernel against the exercise's checks (ctrl+t)",
                self.action_check,
            ),
            ("Next hint", "Reveal the next hint (ctrl+g)", self.action_hint),
            (
                "Interrupt",
                "Stop the code or check that is running (f6, or ctrl+c while it runs)",
                self.action_interrupt,
            ),
            (
                "Enlarge figure",
                "The last figure your code drew, as large as the terminal allows",
                self.action_enlarge_figure,
            ),
            ("Restart kernel", "Clear the live kernel's variables (f8)", self.action_restart),
            ("Reset to starter", "Replace the editor's code with the starter (f9; ctrl+z undoes)", self.action_reset),
            ("Show solution", "The reference solution (f2)", self.action_solution),
            ("Next exercise", "Go to the next exercise (f4)", self.action_next),
            ("Previous exercise", "Go to the previous exercise (f3)", self.action_previous),
            ("Open in $EDITOR", "Edit the code in your own editor (ctrl+o)", self.action_external_editor),
        ):
            yield SystemCommand(title, help, action)
