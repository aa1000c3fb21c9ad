"""The recall quiz: due cards first, then new ones, each graded and scheduled as answered.

A review follows tutor.grading.review's flow. A predict card runs its code once the
learner has committed an answer, in a fresh kernel of its own, so the learner sees what
torch really prints; the key comes from that run.
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.widgets import Footer, Input, Markdown, Static

from tutor.app.screens.base import TutorScreen
from tutor.app.widgets.lesson_markdown import bounded_markdown
from tutor.app.widgets.top_bar import TopBar

if TYPE_CHECKING:
    from tutor.grading.predict import PredictOutcome
    from tutor.packs.catalog import CardRef
    from tutor.progress.scheduling import CardState
EMPTY_ANSWER = "Type an answer first, then enter (a guess is fine; esc stops the quiz)."


def card_markdown(ref: CardRef, order: list[int] | None = None) -> str:
    """The card as Markdown (tutor.grading.review.card_view); a choice card's options in
    ``order`` (see review_order)."""
    from tutor.grading.review import card_view

    view = card_view(ref.card, order)
    parts = [view.prompt]
    if view.options:
        parts += [""] + [f"{n}. {text}" for n, text in enumerate(view.options, 1)]
    if view.blanks is not None:
        parts += ["", "> " + literal_blanks(view.blanks).replace("\n", "\n> ")]
    if view.code is not None:
        parts += ["", "```python", view.code, "```"]
    return "\n".join(parts)


_BLANK = re.compile(r"\[(\d+)\]____")


def literal_blanks(text: str) -> str:
    """Blanks (``[1]____``) escaped so Markdown shows them as written: unescaped, ``____``
    reads as emphasis and the blanks vanish. In a code span nothing is emphasis, and an
    escape would show, so blanks there stay as they are."""
    out, pos = [], 0
    for m in _BLANK.finditer(text):
        in_code = text.count("`", 0, m.start()) % 2 == 1
        out += [text[pos : m.start()], m.group(0) if in_code else rf"\[{m.group(1)}\]\_\_\_\_"]
        pos = m.end()
    return "".join(out) + text[pos:]


def option_orders(queue: list[CardRef], states: dict[tuple[str, str], CardState]) -> dict[int, list[int]]:
    """Each choice card's option order for this review (stable if the quiz is left and
    reopened before answering: the seed is the card's schedule, see review_order)."""
    from tutor.grading.review import review_order

    orders = {n: review_order(ref, states.get((ref.pack.id, ref.key))) for n, ref in enumerate(queue)}
    return {n: order for n, order in orders.items() if order is not None}


class QuizScreen(TutorScreen):
    BINDINGS = [
        Binding("escape", "leave", "Stop quiz", id="quiz.leave"),
    ]

    def __init__(self, lesson: str | None = None) -> None:
        super().__init__()
        self.only_lesson = lesson
        self.queue: list[CardRef] = []
        self.orders: dict[int, list[int]] = {}  # queue index -> a choice card's option order
        self.n = 0
        self.answered = False
        self.grading = False  # an answer is being graded: enter waits for it
        self.right = 0
        self.wrong = 0
        self.leeches: list[str] = []
        self.elsewhere = 0  # cards another quiz session on the same data dir had claimed or answered
        self._started = 0.0
        # Cards are claimed under this id before they are shown (ProgressStore.claim_card).
        self.session_id = uuid.uuid4().hex

    def compose(self) -> ComposeResult:
        yield TopBar("Recall quiz")
        with VerticalScroll(id="quiz"):
            yield Static("", id="card-title", classes="section-title")
            yield Markdown("", id="card")
            yield Static("", id="feedback")
        yield Input(placeholder="", id="answer")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.start()

    @work(group="quiz", exclusive=True, exit_on_error=False)
    async def start(self) -> None:
        app = self.app
        await app.ready.wait()
        if app.catalog is None or app.store is None:
            self._finish(app.load_error or "Nothing to ask.")
            return
        keys = app.catalog.card_keys(lesson=self.only_lesson)
        picked = await asyncio.to_thread(app.store.due_cards, keys)
        # Only the lessons of the cards asked are loaded; one that cannot load leaves its cards out.
        refs, failed = await asyncio.to_thread(app.catalog.card_refs, picked.due + picked.new)
        for sentence in failed:
            self.notify(f"{sentence.rstrip('.')}.", title="Cards left out", severity="error", timeout=20, markup=False)
        queue = [refs[k] for k in picked.due + picked.new if k in refs]
        states = await asyncio.to_thread(app.store.card_states)
        self.orders = option_orders(queue, states)
        if not queue:
            nxt = await asyncio.to_thread(app.store.next_due, keys) if keys else None
            msg = "No recall cards are due." if keys else "The loaded packs have no recall cards."
            if nxt is not None:
                from tutor.progress.scheduling import when

                msg += f" Next card {when(nxt, datetime.now(timezone.utc))}."
            if picked.unopened:
                msg += (
                    "\n\nNew cards come from the lessons you open; on home, a adds the highlighted lesson's cards "
                    f"({picked.unopened} wait in lessons not opened yet)."
                )
            self._finish(msg)
            return
        n = await self._claim_from(queue, 0)
        self.queue, self.n = queue, n  # published once the first card is claimed
        self._show_or_finish()

    async def _claim_from(self, queue: list, n: int) -> int:
        """The first card from ``n`` on that this session can claim (another session may
        hold some, or have answered them since the queue was drawn); len(queue) if none."""
        store = self.app.store
        assert store is not None  # the queue comes from it
        while n < len(queue) and not await asyncio.to_thread(
            store.claim_card, queue[n].pack.id, queue[n].key, self.session_id
        ):
            self.elsewhere += 1
            n += 1
        return n

    def _show_or_finish(self) -> None:
        if self.n < len(self.queue):
            self.show_card()
        elif not self.right + self.wrong:
            self._finish("Another quiz session has every card that is due.")
        else:
            self._finish("That was the last card due. Well done.")

    @work(group="quiz", exclusive=True, exit_on_error=False)
    async def next_card(self) -> None:
        try:
            self.n = await self._claim_from(self.queue, self.n + 1)
            self._show_or_finish()
        finally:
            self.grading = False

    async def on_unmount(self) -> None:
        from tutor.errors import TutorError

        if self.app.store is not None:
            try:
                await asyncio.to_thread(self.app.store.release_claims, self.session_id)
            except TutorError:
                pass  # the claims expire by themselves (a full disk, a locked database)

    def show_card(self) -> None:
        from tutor.grading.review import card_view

        ref = self.queue[self.n]
        self.answered = False
        self._started = time.monotonic()
        self.query_one(TopBar).set_where(f"Recall quiz › card {self.n + 1} of {len(self.queue)}")
        view = card_view(ref.card, self.orders.get(self.n))
        self.query_one("#card-title", Static).update(f"{ref.lesson.title} · {view.label}")
        self.query_one("#card", Markdown).update(bounded_markdown(card_markdown(ref, self.orders.get(self.n))))
        self.query_one("#feedback", Static).update("")
        answer = self.query_one("#answer", Input)
        answer.value = ""
        answer.placeholder = f"{view.hint}, then enter"
        answer.disabled = False
        answer.focus()

    def _finish(self, message: str) -> None:
        self.query_one(TopBar).set_where("Recall quiz")
        self.query_one("#card-title", Static).update("")
        self.query_one("#card", Markdown).update(message)
        answered = self.right + self.wrong
        lines = []
        if answered:
            lines.append(f"Session: {answered} card{'s' * (answered != 1)}, {self.right} right, {self.wrong} wrong.")
            lines += [f"Keeps slipping: {advice}" for advice in self.leeches]
        if self.elsewhere:
            n = self.elsewhere
            lines.append(f"{n} card{'s were' if n != 1 else ' was'} left to another quiz session.")
        if lines:
            self.query_one("#feedback", Static).update("\n".join(lines))
        answer = self.query_one("#answer", Input)
        answer.placeholder = "esc goes back home"
        answer.disabled = True

    @on(Input.Submitted, "#answer")
    def _submitted(self, event: Input.Submitted) -> None:
        if not self.queue or self.n >= len(self.queue) or self.grading:
            return
        if self.answered:
            self.grading = True  # until the next card is claimed and shown: enter waits for it
            self.next_card()
            return
        if not event.value.strip():
            # An Enter pressed too soon is not an answer: nothing is graded or scheduled.
            self.query_one("#feedback", Static).update(Content.styled(EMPTY_ANSWER, "$text-warning"))
            return
        self.grading = True
        self.answer(event.value)

    @work(group="answer", exit_on_error=False)
    async def answer(self, text: str) -> None:
        try:
            await self._grade(text)
        finally:
            self.grading = False

    async def _grade(self, text: str) -> None:
        """tutor.grading.review's flow: run (a predict card), grade, record."""
        from tutor.grading.review import grade_answer, record_review

        app = self.app
        ref = self.queue[self.n]
        card = ref.card
        feedback = self.query_one("#feedback", Static)
        box = self.query_one("#answer", Input)
        ran = None
        if card.type == "predict" and text.strip():
            box.disabled = True
            feedback.update(Content.styled("Running the code…", "$text-accent"))
            ran = await self._run_predict(ref)
            box.disabled = False
        g = grade_answer(card, text, ran, self.orders.get(self.n))
        if g.retry:
            feedback.update(Content.styled(g.feedback, "$text-warning"))
            box.focus()
            return
        duration = int((time.monotonic() - self._started) * 1000)
        assert app.store is not None  # the quiz has cards only once the store is open
        recorded = await asyncio.to_thread(record_review, app.store, ref, g.correct, duration_ms=duration)
        state = recorded.state
        if g.correct:
            self.right += 1
        else:
            self.wrong += 1
        parts: list = [
            ("Correct. " if g.correct else "Wrong. ", "bold $text-success" if g.correct else "bold $text-error")
        ]
        if g.feedback not in ("Correct.", "Not quite."):
            parts.append(g.feedback)
        if not g.correct:
            parts += ["\n", ("Answer: ", "bold"), g.expected]
        if ran is not None:
            parts += ["\n", ("It printed:\n", "bold"), (ran.shown or "(nothing)", "$text-accent")]
        if card.explanation:
            parts += ["\n\n", card.explanation.strip()]
        if recorded.leech is not None:
            parts += ["\n", (f"You have missed this card {state.lapses} times. {recorded.leech}", "$text-warning")]
            if recorded.leech not in self.leeches:
                self.leeches.append(recorded.leech)
        from tutor.progress.scheduling import when

        parts += [
            "\n",
            (f"Next review {when(state.due, datetime.now(timezone.utc))}. Enter for the next card.", "$text-muted"),
        ]
        feedback.update(Content.assemble(*parts))
        self.answered = True
        box.value = ""
        box.placeholder = "enter: next card"
        box.focus()

    async def _run_predict(self, ref: CardRef) -> PredictOutcome | None:
        """The card's code run in a fresh kernel; None if it cannot run here."""
        app = self.app
        kernels = app.kernels
        if kernels is None:
            return None
        if app.trust is not None and not await asyncio.to_thread(app.trust.is_trusted, ref.pack):
            from tutor.app.screens.trust import TrustScreen

            if not await app.push_screen_wait(TrustScreen(ref.pack)):
                self.notify("Not run (pack not trusted): graded against the stored answer.")
                return None
            await asyncio.to_thread(app.trust.trust, ref.pack)
        assert ref.card.type == "predict"  # only predict cards come here
        return await kernels.predict(ref.card.code)

    def action_leave(self) -> None:
        self.app.pop_screen()
