"""``quiz [--lesson L] [--limit N]``: due recall cards in a plain line-by-line session.

Works with stdin from a pipe: lines are read with ``readline`` and end of input ends the
session gracefully (answers so far are already saved: each review commits on its own).
Each predict card runs its code in a fresh kernel of its own (tutor.grading.review), from
a pool made on the first one; if none can start, or the pack is not trusted, the stored
key is used and the learner is told.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from tutor.errors import TutorError
from tutor.escape import for_terminal
from tutor.progress.scheduling import short_list, when

if TYPE_CHECKING:
    from tutor.engine.session import KernelSession
    from tutor.grading.predict import PredictOutcome
    from tutor.grading.review import PredictKernels
    from tutor.packs.catalog import CardRef
    from tutor.packs.loader import Pack
    from tutor.progress.scheduling import CardState
    from tutor.progress.store import ProgressStore


def run(args: argparse.Namespace) -> int:
    from tutor.packs.catalog import Catalog
    from tutor.paths import data_dir
    from tutor.progress import ProgressStore

    if args.limit is not None and args.limit < 1:
        raise TutorError("--limit needs a number of cards, 1 or more")
    store = ProgressStore.open(args.data_dir)
    try:
        if store.notice:
            print(f"ptfund-tutor: {store.notice}", file=sys.stderr)
        catalog = Catalog.load(args.pack, language=store.settings().language or None)
        for problem in catalog.problems:
            print(f"ptfund-tutor: {problem}", file=sys.stderr)
        if args.lesson:
            named = [(pack, les) for pack, les in catalog.lessons() if les.id == args.lesson]
            if not named:
                raise TutorError(f"no lesson {args.lesson!r} (see `ptfund-tutor list`)")
            for pack, les in named:  # naming a lesson adds its cards to the quiz, now and later
                store.add_quiz_lesson(pack.id, les.id, "named")
        refs = list(catalog.cards(lesson=args.lesson))
        quiz = Quiz(
            store,
            refs,
            stdin=sys.stdin,
            stdout=sys.stdout,
            device=args.device,
            connection_file=args.kernel,
            trusted=_trust_check(args.data_dir),
            warm=None
            if args.kernel or args.gateway or os.environ.get("PTFUND_TUTOR_GATEWAY")
            else data_dir(args.data_dir),
        )
        try:
            quiz.run(limit=args.limit)
        finally:
            quiz.close()
    finally:
        store.close()
    return 0


def _trust_check(data_dir):
    """pack -> may its code run here? Built-in packs always; others once the learner trusted them."""
    try:
        from tutor.packs.trust import TrustStore
        from tutor.paths import data_dir as resolve

        trust = TrustStore(resolve(data_dir))
        return lambda pack: pack.builtin or trust.is_trusted(pack)
    except ImportError:
        return lambda pack: pack.builtin


@dataclass
class Tally:
    right: int = 0
    wrong: int = 0
    leeches: list[str] = field(default_factory=list)
    elsewhere: int = 0  # cards another quiz session on the same data dir had claimed or answered


class Quiz:
    """One quiz session over ``refs`` (catalog CardRefs); each answer is saved as it is given."""

    def __init__(
        self,
        store: ProgressStore,
        refs: Iterable[CardRef],
        *,
        stdin: TextIO,
        stdout: TextIO,
        device: str | None = None,
        connection_file: str | None = None,
        trusted: Callable[[Pack], bool] = lambda pack: pack.builtin,
        now: Callable[[], datetime] | None = None,
        warm: Path | None = None,
    ) -> None:
        """``warm``: the data dir whose warm server runs predict cards' code (None: a
        kernel of this process)."""
        self.store = store
        self.warm = warm
        self.refs = {(r.pack.id, r.key): r for r in refs}
        self.stdin = stdin
        self.stdout = stdout
        self.device = device
        self.connection_file = connection_file
        self.trusted = trusted
        self._now = now  # tests pin the clock
        self._loop: asyncio.AbstractEventLoop | None = None
        self._predict: PredictKernels | None = None  # made on the first predict card
        self._attached: KernelSession | None = None  # --kernel: the kernel attached to
        self._kernel_problem: str | None = None
        self.tally = Tally()
        # Cards are claimed under this id before they are shown (ProgressStore.claim_card).
        self.session_id = uuid.uuid4().hex

    def now(self) -> datetime:
        return self._now() if self._now else datetime.now(timezone.utc)

    def say(self, text: str = "") -> None:
        self.stdout.write(for_terminal(text) + "\n")  # pack text and card output: escapes inert
        self.stdout.flush()

    def ask(self, prompt: str = "> ") -> str | None:
        """One line of input, or None at end of input."""
        self.stdout.write(prompt)
        self.stdout.flush()
        line = self.stdin.readline()
        if not line:
            self.say()
            return None
        answer = line.rstrip("\r\n")
        if not _is_tty(self.stdin):
            self.say(answer)  # piped input is not echoed; keep the transcript readable
        return answer

    # ------------------------------------------------------------ session

    def run(self, limit: int | None = None) -> Tally:
        try:
            return self._run(limit)
        finally:
            try:
                self.store.release_claims(self.session_id)  # the card shown when input ended
            except TutorError:
                pass  # the claims expire by themselves (a full disk, a locked database)

    def _run(self, limit: int | None) -> Tally:
        if not self.refs:
            self.say("No recall cards in the loaded packs.")
            return self.tally
        now = self.now()
        picked = self.store.due_cards(list(self.refs), now)
        queue = picked.due + picked.new
        settings = self.store.settings()
        due_text = f"{len(picked.due)} card{'s' * (len(picked.due) != 1)} due"
        new_text = (
            f"{len(picked.new)} new (up to {settings.new_cards_per_day} new a day; {picked.new_today} started today)"
        )
        self.say(f"{due_text}, {new_text}.")
        sources = self._new_card_sources(picked.unopened)
        if sources:
            self.say(sources)
        if not queue:
            self._say_next_due(now)
            return self.tally
        if limit is not None and len(queue) > limit:
            queue = queue[:limit]
            self.say(f"Asking {limit} of them (--limit).")
        self.say(
            "Type your answer and press Enter; an empty answer shows the key and counts as wrong. "
            "End of input (Ctrl-D) stops."
        )
        stopped = False
        for n, key in enumerate(queue, 1):
            if not self.store.claim_card(*key, self.session_id, self.now()):
                self.tally.elsewhere += 1
                continue
            self.say()
            if not self.ask_card(self.refs[key], n, len(queue)):
                stopped = True
                break
        self.summary(stopped)
        return self.tally

    def _new_card_sources(self, unopened: int) -> str | None:
        """Where new cards come from: the lessons in the quiz, and what waits elsewhere."""
        in_quiz = self.store.quiz_lessons()
        titles = list(dict.fromkeys(r.lesson.title for r in self.refs.values() if (r.pack.id, r.lesson.id) in in_quiz))
        more = "more " if titles else ""
        later = (
            f"{unopened} {more}card{'s' * (unopened != 1)} wait in lessons you have not opened "
            "(`quiz --lesson L` adds lesson L's)"
        )
        if titles:
            text = "New cards come from " + short_list(titles)
            return text + (f"; {later}." if unopened else ".")
        if unopened:
            return f"No new cards yet: {later}, or open a lesson in the app."
        return None

    def summary(self, stopped: bool) -> None:
        t = self.tally
        answered = t.right + t.wrong
        self.say()
        if stopped:
            self.say(f"Stopped early; {answered} answer{'s' * (answered != 1)} saved.")
        self.say(f"Session: {answered} card{'s' * (answered != 1)}, {t.right} right, {t.wrong} wrong.")
        if t.elsewhere:
            self.say(f"{t.elsewhere} card{'s were' if t.elsewhere != 1 else ' was'} left to another quiz session.")
        for advice in t.leeches:
            self.say(f"Keeps slipping: {advice}")
        self._say_next_due(self.now())

    def _say_next_due(self, now: datetime) -> None:
        nxt = self.store.next_due(self.refs)
        if nxt is None:
            return
        self.say("Next card due " + ("now." if nxt <= now else f"{when(nxt, now)}."))

    # ------------------------------------------------------------ one card

    def ask_card(self, ref: CardRef, n: int, total: int) -> bool:
        """Ask, grade, show feedback, schedule (tutor.grading.review's flow). False when
        input ended before an answer."""
        from tutor.grading.review import grade_answer, record_review, review_order

        card = ref.card
        state = self.store.card_state(ref.pack.id, ref.key)
        order = review_order(ref, state)
        hint = self._show_card(ref, n, total, state, order)
        started = self.now()
        while True:
            answer = self.ask(f"{hint}> ")
            if answer is None:
                return False
            ran = self._run_predict(ref) if card.type == "predict" and answer.strip() else None
            g = grade_answer(card, answer, ran, order)
            if g.retry:
                self.say(g.feedback)
                continue
            break
        verdict = "Correct." if g.correct else "Wrong."
        self.say(verdict if g.feedback in _PLAIN_FEEDBACK else f"{verdict} {g.feedback}")
        if not g.correct:
            self.say("Answer: " + (g.expected if "\n" not in g.expected else "\n" + _indent(g.expected)))
        if card.explanation:
            self.say(card.explanation.strip())
        now = self.now()
        duration = max(0, int((now - started).total_seconds() * 1000))
        recorded = record_review(self.store, ref, g.correct, now=now, duration_ms=duration)
        if g.correct:
            self.tally.right += 1
        else:
            self.tally.wrong += 1
        if recorded.leech is not None:
            self.say(f"You have missed this card {recorded.state.lapses} times. {recorded.leech}")
            if recorded.leech not in self.tally.leeches:
                self.tally.leeches.append(recorded.leech)
        self.say(f"Next review {when(recorded.state.due, now)}.")
        return True

    def _show_card(self, ref: CardRef, n: int, total: int, state: CardState | None, order: list[int] | None) -> str:
        """Print the card; the hint for its answer prompt."""
        from tutor.grading.review import card_view

        view = card_view(ref.card, order)
        self.say(f"[{n}/{total}] {ref.lesson.title} - {view.label}")
        if state is not None and state.changed(ref.content_hash):
            self.say("(This card changed since you last saw it.)")
        self.say(view.prompt)
        for number, text in enumerate(view.options, 1):
            self.say(f"  {number}. {text}")
        for block in (view.blanks, view.code):
            if block is not None:
                self.say(_indent(block))
        return view.hint

    # ------------------------------------------------------------ predict cards

    def _run_predict(self, ref: CardRef) -> PredictOutcome | None:
        """Run the card's code in a fresh kernel and show the real output; None when the
        code could not run (then grading uses the stored key, and the learner is told)."""
        if not self.trusted(ref.pack):
            self.say(
                f"(Not running code from pack '{ref.pack.id}': you have not trusted it. "
                "Grading against the stored answer.)"
            )
            return None
        assert ref.card.type == "predict"  # only predict cards come here
        outcome = self._warm_predict(ref.card.code)
        if outcome is not None:
            return self._show_predict(outcome)
        if self._kernel_problem is not None:
            self.say("(No kernel; grading against the stored answer.)")
            return None
        try:
            loop, kernels = self._kernels()
            outcome = loop.run_until_complete(kernels.predict(ref.card.code))
        except Exception as exc:  # any failure to get a kernel: degrade, never crash the quiz
            self._kernel_problem = str(exc) or type(exc).__name__
            self.say(f"(Could not start a Python kernel: {self._kernel_problem}. Grading against the stored answer.)")
            return None
        return self._show_predict(outcome)

    def _warm_predict(self, code: str) -> PredictOutcome | None:
        """The outcome from a fresh kernel of the warm server (docs/warm-server.md); None
        where this process runs the code itself."""
        if self.warm is None or self.connection_file or self._predict is not None:
            return None
        from tutor.grading.warm.client import predict_reply

        outcome = predict_reply(self.warm, code, self.device)
        if outcome is None:
            self.warm = None  # no server here: this process's kernel from now on
        return outcome

    def _show_predict(self, outcome: PredictOutcome) -> PredictOutcome:
        self.say("It prints:" if outcome.ok else "Running it:")
        self.say(_indent(outcome.shown or "(nothing)"))
        if not outcome.ok:
            self.say("(Grading against the stored answer.)")
        return outcome

    def _kernels(self) -> tuple[asyncio.AbstractEventLoop, PredictKernels]:
        """The event loop and the fresh kernels predict cards run in, made on first use."""
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        if self._predict is None:
            from tutor.engine import KernelPool, KernelSession
            from tutor.grading.review import PredictKernels

            self.say("(Starting a Python kernel to run the code...)")
            if self.connection_file is None:
                self._predict = PredictKernels(KernelPool(device=self.device, size=1))
            else:
                session = KernelSession(device=self.device, connection_file=self.connection_file)
                self._loop.run_until_complete(session.start())
                self._attached = session
                self._predict = PredictKernels(attached=session)
        return self._loop, self._predict

    def close(self) -> None:
        if self._loop is None:
            return
        try:
            if self._predict is not None:
                self._loop.run_until_complete(self._predict.shutdown())
            if self._attached is not None:
                self._loop.run_until_complete(self._attached.shutdown())
        except Exception:
            pass  # the session is over either way; a kernel that will not stop is not the learner's problem
        finally:
            self._loop.close()
            self._loop = None
            self._predict = None
            self._attached = None


# Feedback that only repeats the verdict.
_PLAIN_FEEDBACK = {"Correct.", "Not quite.", ""}


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line if line else line for line in text.splitlines())
