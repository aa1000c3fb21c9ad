"""``watch [DIR]``: exercise files in a folder, checked on every save.

One file per exercise (tutor/packs/workfolder.py); a save, however the editor writes it
(in place, vim's rename over the old file, VS Code's atomic replace), re-checks that file
and prints the verdict; a pass moves on to the next exercise. Keys answer at once: h hint,
s solution, r reset, q recall quiz, n/p next/previous, x quit. Verdicts come from the warm
server when one can run (tutor/grading/warm), else from a kernel pool of this process;
attempts go to the same progress store as the app's.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from tutor.errors import TutorError

if TYPE_CHECKING:
    from tutor.engine.pool import KernelPool
    from tutor.grading.verdict import Verdict
    from tutor.packs.catalog import ExerciseRef
    from tutor.progress.store import ProgressStore

T = TypeVar("T")

DEBOUNCE_MS = 250  # one save is several file events (vim: rename, write, chmod): one check
DUPLICATE_WINDOW = 2.0  # the same text again this soon is the same save seen twice
# File systems whose changes made on another machine raise no local file events.
NETWORK_FS = {"nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "afs", "ceph", "glusterfs", "vboxsf", "fuse.sshfs"}
KEYS = "keys: h hint · s solution · r reset · q quiz · n next · p previous · x quit"


def run(args: argparse.Namespace) -> int:
    from tutor.commands.check import require_trust
    from tutor.packs.catalog import Catalog
    from tutor.packs.workfolder import write_starters

    root = Path(args.dir).expanduser().resolve()
    catalog = Catalog.load(args.pack)
    for problem in catalog.problems:
        print(f"ptfund-tutor: {problem}", file=sys.stderr)
    refs = list(catalog.exercises(lesson=args.lesson))
    if not refs:
        raise TutorError(f"no lesson {args.lesson!r} with exercises (see `ptfund-tutor list`)")
    for pack in {id(r.pack): r.pack for r in refs}.values():
        require_trust(pack, args)
    try:
        created = write_starters(root, refs)
    except OSError as exc:
        raise TutorError(f"cannot write the exercise files in {root}: {exc.strerror or exc}") from None
    poll = args.poll or on_network_fs(root)
    watch = Watch(root, refs, args, poll)
    print(f"{created} new exercise file{'s' * (created != 1)} in {root}." if created else f"Exercise files in {root}.")
    if poll:
        print("Watching by polling (a network file system, or --poll).")
    try:
        return asyncio.run(watch.main())
    except KeyboardInterrupt:
        print("\nStopped watching.")
        return 0
    finally:
        watch.close()


def on_network_fs(path: Path) -> bool:
    """Whether ``path`` is on a file system that may not raise file events (NFS and kin)."""
    try:
        with open("/proc/mounts", encoding="utf-8") as f:
            mounts = [line.split()[1:3] for line in f if len(line.split()) > 2]
    except OSError:
        return False
    best, kind = "", ""
    for point, fs in mounts:
        point = point.replace("\\040", " ")
        if (str(path) == point or str(path).startswith(point.rstrip("/") + "/")) and len(point) > len(best):
            best, kind = point, fs
    return kind in NETWORK_FS


def in_thread(func: Callable[[], T]) -> asyncio.Future[T]:
    """Run a blocking call in a daemon thread: quitting never waits for it (the warm server
    stops a verification whose client went away)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: T | None, error: BaseException | None) -> None:
        if future.done():  # the waiting task was cancelled (quitting)
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)  # type: ignore[arg-type]

    def target() -> None:
        try:
            result = func()
        except BaseException as exc:  # delivered to the awaiting task
            loop.call_soon_threadsafe(settle, None, exc)
        else:
            loop.call_soon_threadsafe(settle, result, None)

    threading.Thread(target=target, daemon=True, name="ptfund-watch-verify").start()
    return future


class Watch:
    def __init__(self, root: Path, refs: list[ExerciseRef], args: argparse.Namespace, poll: bool) -> None:
        from tutor.packs.workfolder import exercise_file
        from tutor.paths import data_dir
        from tutor.progress.store import ProgressStore

        self.root = root
        self.refs = refs
        self.args = args
        self.poll = poll
        self.data = data_dir(args.data_dir)
        self.packs = [str(Path(d).expanduser().resolve()) for d in args.pack]
        self.by_path = {exercise_file(root, r): r for r in refs}
        self.store: ProgressStore = ProgressStore.open(self.data)
        stats = self.store.exercise_stats()
        self.passed = {(r.pack.id, r.key) for r in refs if (s := stats.get((r.pack.id, r.key))) and s.passed}
        self.index = next((i for i, r in enumerate(refs) if (r.pack.id, r.key) not in self.passed), 0)
        self.last: dict[Path, tuple[str, float]] = {}
        self.events: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self.queued: set[Path] = set()  # files with a check waiting in events
        self.warm = not (args.kernel or args.gateway or os.environ.get("PTFUND_TUTOR_GATEWAY"))
        self.pool: KernelPool | None = None
        self._tty: list[Any] | None = None

    @property
    def current(self) -> ExerciseRef:
        return self.refs[self.index]

    def say(self, text: str = "") -> None:
        print(text, flush=True)

    def close(self) -> None:
        self._cooked()
        self.store.close()

    # ------------------------------------------------------------ the loop

    async def main(self) -> int:
        from watchfiles import awatch

        stop = asyncio.Event()
        self.show_current()
        watcher = asyncio.ensure_future(self._watch(awatch, stop))
        self._keys_on()
        try:
            while True:
                kind, value = await self.events.get()
                if kind == "save":
                    await self.check(value)
                elif kind == "error":
                    raise TutorError(value)
                elif not await self.key(value):
                    return 0
        finally:
            self._keys_off()
            stop.set()
            watcher.cancel()
            if self.pool is not None:
                await self.pool.shutdown()

    async def _watch(self, awatch: Callable[..., Any], stop: asyncio.Event) -> None:
        try:
            async for changes in awatch(
                self.root,
                stop_event=stop,
                debounce=DEBOUNCE_MS,
                step=50,
                force_polling=self.poll,
                poll_delay_ms=300,
                watch_filter=lambda _change, path: Path(path) in self.by_path,
            ):
                for path in sorted({Path(p) for _, p in changes}):
                    # A file saved again before its check began is checked once, at its latest
                    # text; one missing for now is mid-rename: its next event has it.
                    if path.is_file() and path not in self.queued:
                        self.queued.add(path)
                        self.events.put_nowait(("save", path))
        except Exception as exc:  # the folder went away, no more inotify watches
            self.events.put_nowait(("error", f"cannot watch {self.root}: {exc}"))

    # ------------------------------------------------------------ keys

    def _keys_on(self) -> None:
        """Single keys on a terminal (cbreak: no Enter needed); lines from a pipe."""
        fd = sys.stdin.fileno() if sys.stdin else -1
        if fd < 0:
            return
        if os.isatty(fd):
            import termios
            import tty

            if self._tty is None:
                self._tty = termios.tcgetattr(fd)
            tty.setcbreak(fd)
        loop = asyncio.get_running_loop()
        loop.add_reader(fd, self._on_input, fd)

    def _on_input(self, fd: int) -> None:
        try:
            data = os.read(fd, 64)
        except OSError:
            data = b""
        if not data:  # end of piped input: keys are over, watching goes on
            asyncio.get_running_loop().remove_reader(fd)
            return
        for ch in data.decode("utf-8", "replace"):
            if not ch.isspace():
                self.events.put_nowait(("key", ch))

    def _keys_off(self) -> None:
        fd = sys.stdin.fileno() if sys.stdin else -1
        if fd >= 0:
            asyncio.get_running_loop().remove_reader(fd)
        self._cooked()

    def _cooked(self) -> None:
        if self._tty is not None:
            import termios

            termios.tcsetattr(sys.stdin.fileno(), termios.TCSADRAIN, self._tty)

    async def key(self, ch: str) -> bool:
        """Act on a key; False to quit."""
        ref = self.current
        if ch in ("x", "\x04"):
            self.say("Stopped watching.")
            return False
        if ch == "h":
            self.hint(ref)
        elif ch == "s":
            self.say(f"Solution of {ref.key} (not written to your file):\n")
            self.say(ref.exercise.solution.rstrip())
            self.say()
        elif ch == "r":
            self.reset(ref)
        elif ch == "q":
            await self.quiz(ref)
        elif ch in ("n", "p"):
            self.index = (self.index + (1 if ch == "n" else -1)) % len(self.refs)
            self.show_current()
        else:
            self.say(KEYS)
        return True

    def hint(self, ref: ExerciseRef) -> None:
        hints = ref.exercise.hints
        used = self.store.hints_used(ref.pack.id, ref.key)
        if not hints:
            self.say("This exercise has no hints; s shows the solution.")
            return
        n = min(used, len(hints) - 1)
        self.store.record_hint(ref.pack.id, ref.key, n, content_hash=ref.content_hash)
        last = " (the last one; s shows the solution)" if n == len(hints) - 1 else ""
        self.say(f"Hint {n + 1} of {len(hints)}{last}: {hints[n].strip()}")

    def reset(self, ref: ExerciseRef) -> None:
        from tutor.packs.workfolder import exercise_file
        from tutor.packs.workfolder import reset as reset_file

        try:
            backup = reset_file(self.root, ref)
        except OSError as exc:
            self.say(f"Could not reset {exercise_file(self.root, ref)}: {exc.strerror or exc}")
            return
        kept = f"; your text is in {backup.name}" if backup else ""
        self.say(f"{self._rel(exercise_file(self.root, ref))} has its starter again{kept}.")

    async def quiz(self, ref: ExerciseRef) -> None:
        """The recall quiz of this lesson, line by line, then back to watching."""
        from tutor.commands.quiz import Quiz, _trust_check
        from tutor.packs.catalog import CardRef

        self._keys_off()
        try:
            self.store.add_quiz_lesson(ref.pack.id, ref.lesson.id, "named")
            cards = [CardRef(ref.pack, ref.lesson, card) for card in ref.lesson.cards]
            quiz = Quiz(
                self.store,
                cards,
                stdin=sys.stdin,
                stdout=sys.stdout,
                device=self.args.device,
                connection_file=self.args.kernel,
                trusted=_trust_check(self.args.data_dir),
                warm=self.data if self.warm else None,
            )
            try:
                await asyncio.to_thread(quiz.run)
            finally:
                quiz.close()
        finally:
            self.say(f"\nBack to {ref.key}; {KEYS}")
            self._keys_on()

    # ------------------------------------------------------------ checks

    def _rel(self, path: Path) -> str:
        try:
            return str(path.relative_to(Path.cwd()))
        except ValueError:
            return str(path)

    def show_current(self) -> None:
        from tutor.packs.workfolder import exercise_file

        ref = self.current
        done = " (passed)" if (ref.pack.id, ref.key) in self.passed else ""
        self.say(f"\n── {ref.key}: {ref.exercise.title}{done} ── {self.index + 1} of {len(self.refs)}")
        self.say(ref.exercise.prompt.strip())
        self.say(f"\nEdit {self._rel(exercise_file(self.root, ref))} and save it to check it.")
        self.say(KEYS)

    async def check(self, path: Path) -> None:
        from tutor.grading.code_size import read_code_file

        self.queued.discard(path)
        ref = self.by_path[path]
        try:
            code = read_code_file(path)
        except TutorError as exc:
            self.say(f"{self._rel(path)}: {exc}")
            return
        seen = self.last.get(path)
        if seen and seen[0] == code and time.monotonic() - seen[1] < DUPLICATE_WINDOW:
            return
        self.last[path] = (code, time.monotonic())
        self.say(f"\n[{time.strftime('%H:%M:%S')}] Checking {self._rel(path)} …")
        try:
            verdict, warning = await self.verify(ref, code)
        except TutorError as exc:
            self.say(f"ptfund-tutor: {exc}")
            return
        mark = "✓" if verdict.passed else "✗"
        self.say(f"{mark} {ref.key}: {verdict.feedback()}")
        if warning:
            self.say(warning)
        if verdict.passed:
            self.passed.add((ref.pack.id, ref.key))
            if ref is self.current:
                self.advance()

    def advance(self) -> None:
        left = [i for i, r in enumerate(self.refs) if (r.pack.id, r.key) not in self.passed]
        if not left:
            self.say("\nEvery exercise here passes. x quits; q quizzes this lesson.")
            return
        self.index = next((i for i in left if i > self.index), left[0])
        self.say(f"\nNext exercise: {self.current.key}")
        self.show_current()

    async def verify(self, ref: ExerciseRef, code: str) -> tuple[Verdict, str | None]:
        if self.warm:
            from tutor.grading.warm.client import verdict_reply, verdict_request

            message = verdict_request(ref.qualified, code, packs=self.packs, device=self.args.device)
            reply = await in_thread(lambda: verdict_reply(self.data, {**message, "record": True}))
            if reply is not None:
                return reply[2], reply[3]
            self.warm = False  # no server here: kernels of this process from now on
        from tutor.grading.attempts import record_attempt
        from tutor.grading.verify import verify_in_fresh_kernel

        if self.pool is None and not self.args.kernel:
            from tutor.engine.pool import KernelPool
            from tutor.grading.verify import KERNELS_PER_VERIFICATION

            self.pool = KernelPool(device=self.args.device, size=KERNELS_PER_VERIFICATION)
            await self.pool.start()
        verdict = await verify_in_fresh_kernel(
            ref.exercise, code, device=self.args.device, connection_file=self.args.kernel, pool=self.pool
        )
        return verdict, await asyncio.to_thread(record_attempt, self.data, ref, code, verdict)
