"""The Textual app: screens over the catalog, the progress store and the kernels.

The first screen paints before anything heavy is imported: the packs' outlines (YAML)
and the progress store load in a thread (a lesson is loaded when it is opened:
tutor/packs/lazy_catalog.py), and the engine (jupyter_client) is imported and
the kernels started after that. torch is never imported in this process; it lives in the
kernels.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.reactive import var
from textual.screen import Screen
from textual.worker import WorkerState

from tutor.app.palette import LessonCommands
from tutor.app.prefs import Prefs
from tutor.app.screens.too_small import MIN_HEIGHT, MIN_WIDTH
from tutor.app.status import KernelStatus
from tutor.errors import TutorError
from tutor.paths import data_dir as resolve_data_dir

if TYPE_CHECKING:
    from types import FrameType

    from textual import events
    from textual.geometry import Size
    from textual.worker import Worker

    from tutor.app.kernels import Kernels
    from tutor.packs.lazy_catalog import LazyCatalog
    from tutor.packs.trust import TrustStore
    from tutor.progress import ProgressStore

DARK_THEME, LIGHT_THEME = "textual-dark", "textual-light"
log = logging.getLogger("tutor.app")
LOG_FILENAME = "tutor.log"

# What the learner is told failed, by worker group (the screens name their workers' groups).
WORKER_WHAT = {
    "startup": "Loading the packs and your progress",
    "prefs": "Saving your preferences",
    "navigate": "Going home",
    "home-refresh": "Refreshing the home screen",
    "exercise": "Opening the exercise",
    "draft": "Saving your draft",
    "run": "Running your code",
    "check": "Checking your code",
    "restart": "Restarting the kernel",
    "hint": "Recording the hint",
    "solution": "Showing the solution",
    "complete": "Completion",
    "quiz": "Loading the quiz",
    "answer": "Saving your answer",
    "progress": "Loading your progress",
    "class-report": "Loading the class report",
    "figure": "Clearing the figure",
    "home-add-cards": "Adding the lesson's cards to the quiz",
    "quiz-lessons": "Adding the lesson's cards to the quiz",
}


class _LogFile(logging.FileHandler):
    """DATA_DIR/tutor.log, best effort: on a full disk a line that cannot be written is
    dropped (the learner was already told in the app), never printed over the screen, and
    closing it at quit never fails the exit."""

    def handleError(self, record: logging.LogRecord) -> None:
        pass

    def close(self) -> None:
        try:
            super().close()
        except OSError:
            pass


@dataclass
class TutorOptions:
    packs: list[str] = field(default_factory=list)
    data_dir: str | None = None
    device: str | None = None
    kernel: str | None = None  # a connection file to attach to
    builtin: bool = True  # load the built-in pack (tests use their own packs only)
    installed: bool | None = None  # load the packs installed with pip (default: as builtin)
    start_kernels: bool = True  # False: never start kernels (snapshot tests freeze "kernel off")


class TutorApp(App):
    CSS_PATH = "tutor.tcss"
    TITLE = "ptfund-tutor"
    COMMANDS = App.COMMANDS | {LessonCommands}
    BINDINGS = [
        Binding("f1", "help", "Help", id="app.help"),
        Binding("ctrl+q", "quit", "Quit", show=False, id="app.quit", priority=True),
        Binding("f12", "toggle_theme", "Light/dark", show=False, id="app.theme"),
    ]

    kernel_status: var[KernelStatus] = var(KernelStatus("off"))

    def __init__(self, options: TutorOptions | None = None) -> None:
        super().__init__()
        self.options = options or TutorOptions()
        self.data_dir: Path = resolve_data_dir(self.options.data_dir)
        self.prefs = Prefs.load(self.data_dir)
        self.catalog: LazyCatalog | None = None
        self.store: ProgressStore | None = None
        self.trust: TrustStore | None = None
        self.kernels: Kernels | None = None
        self.load_error: str | None = None
        self.class_reports: list[Path] = []  # grade --report's latest, for the packs loaded
        self.ready = asyncio.Event()  # catalog and store are loaded (or failed: load_error)

    # ------------------------------------------------------------ start and stop

    def on_mount(self) -> None:
        self._start_log()
        self.theme = self.prefs.theme if self.prefs.theme in self.available_themes else DARK_THEME
        from tutor.app.screens.home import HomeScreen

        self.push_screen(HomeScreen())
        self._check_size()
        self._install_signal_handlers()
        # After the first frame: the loader's imports (pydantic, yaml) hold the GIL a while.
        self.call_after_refresh(self._start_loading)

    def _start_loading(self) -> None:
        self.run_worker(self._load(), name="load", group="startup", exit_on_error=False)

    async def _load(self) -> None:
        try:
            self.catalog, self.store, self.trust = await asyncio.to_thread(self._load_blocking)
        except Exception as exc:  # one sentence on the home screen; the app stays up
            self.load_error = f"Could not load your progress: {exc}"
        if self.catalog is not None:
            from tutor.grading.report_file import recorded

            packs = [pack.id for pack in self.catalog.packs]
            self.class_reports = await asyncio.to_thread(recorded, self.data_dir, packs)
        self.ready.set()
        if self.store is not None and self.store.notice:
            self.notify(self.store.notice, title="Progress", severity="warning", timeout=15)
        if self.options.start_kernels:
            from tutor.app.kernels import Kernels

            self.kernels = Kernels(
                device=self.options.device,
                connection_file=self.options.kernel,
                on_status=self._set_kernel_status,
            )
            await self.kernels.start()

    def _load_blocking(self):
        from tutor.packs.catalog import Outline
        from tutor.packs.lazy_catalog import LazyCatalog
        from tutor.packs.trust import TrustStore
        from tutor.progress import ProgressStore

        try:
            store = ProgressStore.open(self.data_dir)
        except TutorError as exc:
            # e.g. a full disk: show what is saved; each save that fails says so
            store = ProgressStore.open(self.data_dir, readonly=True)
            store.notice = (
                f"{str(exc).rstrip('.')}. Your progress is shown, but nothing new can be saved until that is fixed."
            )
        outline = Outline.load(
            self.options.packs,
            builtin=self.options.builtin,
            installed=self.options.installed,
            language=store.settings().language or None,
        )
        catalog = LazyCatalog(outline)
        return catalog, store, TrustStore(self.data_dir)

    def _set_kernel_status(self, status: KernelStatus) -> None:
        self.kernel_status = status

    def _install_signal_handlers(self) -> None:
        self._signal_loop = asyncio.get_running_loop()  # the handlers run outside it
        # Plain handlers, not the event loop's: they must run even when the loop is stuck
        # writing to a terminal that is gone (the output queue of a closed tty never drains).
        self._old_handlers = {}
        for sig in (signal.SIGTERM, signal.SIGHUP):
            try:
                self._old_handlers[sig] = signal.signal(sig, self._on_signal)
            except (ValueError, OSError):  # not the main thread
                pass

    def _restore_signal_handlers(self) -> None:
        for sig, old in getattr(self, "_old_handlers", {}).items():
            try:
                signal.signal(sig, old)
            except (ValueError, OSError, TypeError):
                pass

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        """Save the draft first, whatever the UI is doing; then leave."""
        from tutor.app.screens.lesson import LessonScreen

        for screen in self.screen_stack:
            if isinstance(screen, LessonScreen):
                try:
                    screen.save_draft_now()
                except Exception:
                    pass
        if signum == signal.SIGHUP:
            # The terminal is gone: there is nothing to restore on it, and writing to it
            # may block forever. Kernels notice their parent is gone and exit by themselves.
            os._exit(0)
        # A polite kill: restore the terminal and stop the kernels, but never hang on it.
        watchdog = threading.Timer(8.0, os._exit, args=(0,))
        watchdog.daemon = True
        watchdog.start()
        self._signal_loop.call_soon_threadsafe(self.exit)  # safe from a signal handler

    async def action_quit(self) -> None:
        await self.save_drafts()
        self.exit()

    async def save_drafts(self) -> None:
        from tutor.app.screens.lesson import LessonScreen

        for screen in self.screen_stack:
            if isinstance(screen, LessonScreen):
                await screen.save_draft()

    async def on_unmount(self) -> None:
        self._restore_signal_handlers()
        self._stop_log()
        if self.kernels is not None:
            try:
                await asyncio.wait_for(self.kernels.shutdown(), timeout=4)
            except (asyncio.TimeoutError, Exception):
                pass
        if self.store is not None:
            self.store.close()

    # ------------------------------------------------------------ failed workers

    def _start_log(self) -> None:
        """Warnings and errors of the whole process go to DATA_DIR/tutor.log (opened on the
        first line): the terminal belongs to the app, so nothing may print there."""
        self._log_handler = _LogFile(self.data_dir / LOG_FILENAME, delay=True, encoding="utf-8")
        self._log_handler.setLevel(logging.WARNING)
        self._log_handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        logging.getLogger("tutor").addHandler(self._log_handler)

    def _stop_log(self) -> None:
        handler = getattr(self, "_log_handler", None)
        if handler is not None:
            logging.getLogger("tutor").removeHandler(handler)
            handler.close()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        self.report_failed_worker(event)

    def report_failed_worker(self, event: Worker.StateChanged) -> None:
        """The one place a worker that raised (a store error such as a full disk or a locked
        database) is told to the learner and logged, never lost. Worker messages do not
        bubble: the app's own workers come here directly, the screens' through TutorScreen."""
        if event.state != WorkerState.ERROR:
            return
        worker = event.worker
        error = worker.error
        what = WORKER_WHAT.get(worker.group, "A background task")
        reason = str(error).rstrip(".") or type(error).__name__
        sentence = f"{what} failed: {reason}."
        log.error("worker %s (group %s) failed", worker.name, worker.group, exc_info=error)
        self.notify(sentence, title="Something went wrong", severity="error", timeout=20)

    # ------------------------------------------------------------ size

    def on_resize(self, event: events.Resize) -> None:
        self._check_size(event.size)  # self.size lags: textual applies it on a timer

    def _check_size(self, size: Size | None = None) -> None:
        from tutor.app.screens.too_small import TooSmallScreen

        width, height = size or self.size
        small = width < MIN_WIDTH or height < MIN_HEIGHT
        if small and not isinstance(self.screen, TooSmallScreen):
            self.push_screen(TooSmallScreen())
        elif not small and isinstance(self.screen, TooSmallScreen):
            self.pop_screen()
        elif small:
            self.screen.refresh()

    # ------------------------------------------------------------ actions

    def action_help(self) -> None:
        from tutor.app.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_toggle_theme(self) -> None:
        self.theme = LIGHT_THEME if self.current_theme.dark else DARK_THEME

    def watch_theme(self, theme: str) -> None:
        if self.prefs.theme != theme:
            self.prefs.theme = theme
            self.run_worker(asyncio.to_thread(self.prefs.save, self.data_dir), group="prefs", exit_on_error=False)

    def note_lesson_opened(self, pack: str, lesson: str, how: str = "opened") -> None:
        """The lesson's cards join the recall quiz (new cards come only from such lessons)."""
        if self.store is not None:
            self.run_worker(
                asyncio.to_thread(self.store.add_quiz_lesson, pack, lesson, how),
                group="quiz-lessons",
                exit_on_error=False,
            )

    def cannot_open(self, exc: Exception) -> None:
        """A lesson that did not load (its first problem, FILE:LINE:COL), in one sentence."""
        self.notify(
            f"{str(exc).rstrip('.')}.", title="Cannot open the lesson", severity="error", timeout=20, markup=False
        )

    def open_quiz(self) -> None:
        from tutor.app.screens.quiz import QuizScreen

        self.push_screen(QuizScreen())

    def open_progress(self) -> None:
        from tutor.app.screens.progress import ProgressScreen

        self.push_screen(ProgressScreen())

    def open_class_report(self, path: Path) -> None:
        from tutor.app.screens.class_report import ClassReportScreen

        self.push_screen(ClassReportScreen(path))

    def go_home(self) -> None:
        self.run_worker(self._go_home(), group="navigate", exit_on_error=False)

    async def _go_home(self) -> None:
        from tutor.app.screens.home import HomeScreen

        await self.save_drafts()  # before the lesson screens go
        while len(self.screen_stack) > 1 and not isinstance(self.screen, HomeScreen):
            await self.pop_screen()

    def open_lesson(self, pack: str, lesson: str, exercise: str | None = None) -> None:
        """Open a lesson (at an exercise) from anywhere: the screens above home go first."""
        self.run_worker(self._open_lesson(pack, lesson, exercise), group="navigate", exit_on_error=False)

    async def _open_lesson(self, pack: str, lesson: str, exercise: str | None) -> None:
        from tutor.app.screens.home import HomeScreen

        await self._go_home()
        if isinstance(self.screen, HomeScreen):
            self.screen.open_lesson(pack, lesson, exercise)

    # ------------------------------------------------------------ command palette

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        provides = getattr(screen, "palette_commands", None)
        if provides is not None:
            yield from provides()
        yield SystemCommand("Help", "Every key binding", self.action_help)
        yield SystemCommand("Home", "Packs, lessons, due cards", self.go_home)
        yield SystemCommand("Recall quiz", "Answer the recall cards due today", self.open_quiz)
        yield SystemCommand("Progress", "Completion per lesson, reviews over time, due forecast", self.open_progress)
        for path in self.class_reports:
            yield SystemCommand(
                "Class report",
                f"What the class got right and wrong: pass rates, mistakes ranked ({path.parent})",
                partial(self.open_class_report, path),
            )
        yield SystemCommand("Light / dark theme", "Switch between the light and dark theme", self.action_toggle_theme)
        yield from super().get_system_commands(screen)
