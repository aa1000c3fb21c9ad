"""One review of one recall card, the same wherever it happens: the app's quiz, the line by
line ``quiz`` command, and ``pack test`` proving a predict card's stored key.

The flow is four steps, each a function here, so the three callers cannot drift apart:

1. render: ``card_view`` (the card's label, prompt, options in the order shown, code,
   blanks, and the hint for the answer box); each front end lays it out its own way.
2. run: ``PredictKernels.predict`` runs a predict card's code, and the isolation rule is
   one: every card's code runs in a fresh kernel of its own (a spare from a
   ``KernelPool``; forked kernels cost milliseconds), so nothing one card does (a
   variable, ``torch.set_default_dtype``, a seed) reaches the next. A kernel reached
   through a connection file (``--kernel``) cannot be multiplied: there the code runs in
   that kernel.
3. grade: ``grade_answer`` (an empty answer is wrong, "No answer given."; a predict card
   is graded against the key its run produced, else the stored one); ``pack test``
   judges a run with ``prove_key`` instead.
4. record: ``record_review`` schedules the card and says whether it became a leech.

torch never runs here: predict cards' code runs in kernels (tutor.engine).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from tutor.grading.cards import Grade, choice_order, cloze_prompt, grade, review_seed, revisit_advice
from tutor.grading.predict import DEFAULT_TIMEOUT, PredictOutcome

if TYPE_CHECKING:
    from tutor.engine.pool import KernelPool
    from tutor.engine.session import KernelSession
    from tutor.packs import models as m
    from tutor.packs.catalog import CardRef
    from tutor.progress.scheduling import CardState
    from tutor.progress.store import ProgressStore

# What each card type is called in the quiz, and what its answer box asks for.
CARD_LABEL = {
    "choice": "multiple choice",
    "short": "short answer",
    "numeric": "a number",
    "predict": "predict the output",
    "cloze": "fill the blanks",
}
ANSWER_HINT = {
    "choice": "the number of your choice",
    "short": "your answer",
    "numeric": "a number (0.001, 1e-3, 1/1000)",
    "predict": "what it prints, or the exception's name",
    "cloze": "the blanks in order, separated by ';'",
}
NO_ANSWER = "No answer given."


# ---------------------------------------------------------------- 1. render


@dataclass(frozen=True)
class CardView:
    """What a review shows of a card, before any layout."""

    label: str  # the card type, as the quiz names it
    prompt: str
    options: tuple[str, ...] = ()  # a choice card's options, in the order shown (numbered from 1)
    blanks: str | None = None  # a cloze card's text with numbered blanks
    code: str | None = None  # a predict card's code
    hint: str = "your answer"  # what the answer box asks for


def card_view(card: m.Card, order: list[int] | None = None) -> CardView:
    """``order``: a choice card's option order for this review (``review_order``)."""
    label = CARD_LABEL.get(card.type, card.type)
    hint = ANSWER_HINT.get(card.type, "your answer")
    prompt = card.prompt.strip()
    if card.type == "choice":
        shown = order if order is not None else range(len(card.options))
        return CardView(label, prompt, options=tuple(card.options[i].text for i in shown), hint=hint)
    if card.type == "cloze":
        if card.unordered:
            hint = "the blanks in any order, separated by ';'"
        return CardView(label, prompt, blanks=cloze_prompt(card), hint=hint)
    if card.type == "predict":
        return CardView(label, prompt, code=card.code.rstrip(), hint=hint)
    return CardView(label, prompt, hint=hint)


def review_order(ref: CardRef, state: CardState | None) -> list[int] | None:
    """A choice card's option order for this review (stable until it is answered: the seed
    is the card's schedule); None for other cards."""
    if ref.card.type != "choice":
        return None
    return choice_order(ref.card, review_seed(ref.pack.id, ref.key, state))


# ---------------------------------------------------------------- 2. run


class PredictKernels:
    """Where predict cards' code runs: each card in a fresh kernel from ``pool``, or in
    ``attached`` (a kernel that cannot be multiplied). Starting a kernel may fail: the
    engine's exception reaches the caller, which degrades to the stored key."""

    def __init__(self, pool: KernelPool | None = None, *, attached: KernelSession | None = None) -> None:
        if (pool is None) == (attached is None):
            raise ValueError("PredictKernels needs a KernelPool or an attached KernelSession")
        self.pool = pool
        self.attached = attached

    async def predict(self, code: str, *, timeout: float = DEFAULT_TIMEOUT) -> PredictOutcome:
        from tutor.grading.predict import run_predict

        if self.attached is not None:
            return await run_predict(self.attached, code, timeout=timeout)
        assert self.pool is not None  # one of the two, by the constructor
        kernel = await self.pool.take()
        try:
            return await run_predict(kernel, code, timeout=timeout)
        finally:
            self.pool.give_back(kernel)  # shut down in the background; the pool's shutdown waits

    async def shutdown(self) -> None:
        """Stop the pool's kernels (an attached kernel belongs to whoever attached it)."""
        if self.pool is not None:
            await self.pool.shutdown()


# ---------------------------------------------------------------- 3. grade


def grade_answer(card: m.Card, answer: str, ran: PredictOutcome | None = None, order: list[int] | None = None) -> Grade:
    """The grade of one answer. ``ran``: the predict card's run just now (its key counts
    when the run finished); an empty answer is wrong and shows the key."""
    key = ran.key if ran is not None and ran.ok else None
    g = grade(card, answer, key=key, order=order)
    if not answer.strip():
        return Grade(False, NO_ANSWER, g.expected)
    return g


def _normalise(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def prove_key(card: m.PredictCard, ran: PredictOutcome) -> tuple[bool, str]:
    """``pack test``'s judgement of a predict card: does the stored key match the run?"""
    if not ran.ok:
        return False, ran.problem or "did not finish"
    if _normalise(ran.key) == _normalise(card.expected):
        return True, "key matches"
    return False, f"stored key is stale: torch now gives {ran.key!r}, the card says {card.expected!r}"


# ---------------------------------------------------------------- 4. record


@dataclass(frozen=True)
class Recorded:
    state: CardState  # the card's new schedule
    leech: str | None  # advice, when the card keeps slipping (a leech missed again)


def record_review(
    store: ProgressStore, ref: CardRef, correct: bool, *, now: datetime | None = None, duration_ms: int | None = None
) -> Recorded:
    """Save the review and reschedule the card (blocking: the app calls it in a thread)."""
    state = store.review(ref.pack.id, ref.key, correct, now, content_hash=ref.content_hash, duration_ms=duration_ms)
    leech = revisit_advice(ref.lesson.title, ref.card) if not correct and state.leech else None
    return Recorded(state, leech)
