"""Grading recall cards: ``grade(card, answer) -> Grade``. Pure Python: no torch, no textual.

Answers are compared after normalisation (see :func:`normalise`) so that a learner who
knows the answer is not marked wrong for spacing, case or Unicode look-alikes.
"""

from __future__ import annotations

import math
import random
import re
import unicodedata
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from tutor.packs.models import (
    CLOZE_BLANK,
    Card,
    ChoiceCard,
    ClozeCard,
    NumericCard,
    PredictCard,
    ShortCard,
)

if TYPE_CHECKING:
    from tutor.progress.scheduling import CardState


@dataclass(frozen=True)
class Grade:
    correct: bool
    feedback: str  # one or two sentences for the learner
    expected: str  # the answer key as shown after answering
    retry: bool = False  # the answer could not be read (e.g. option 7 of 3): ask again, do not grade
    written: str | None = None  # accepted in another form: the form the key writes it in


# ---------------------------------------------------------------- normalisation

# Spaces next to these mean nothing in the answers we compare: "(1,3)" == "( 1, 3 )".
_TIGHT = r"()\[\]{},:;="
_AROUND_PUNCT = re.compile(rf"\s*([{_TIGHT}])\s*")
_SPACE = re.compile(r"\s+")
# Characters NFKC leaves alone but learners type by accident (smart quotes, Unicode minus).
_LOOKALIKES = str.maketrans(
    {
        "\u2212": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2018": "'",
        "\u2019": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u00d7": "x",
    }
)


def normalise(text: str, *, case_sensitive: bool = False) -> str:
    """NFKC, look-alike punctuation unified, case folded (unless ``case_sensitive``),
    whitespace collapsed and dropped around brackets, commas, colons and ``=``."""
    text = unicodedata.normalize("NFKC", text).translate(_LOOKALIKES)
    if not case_sensitive:
        text = text.casefold()
    text = _SPACE.sub(" ", text).strip()
    return _AROUND_PUNCT.sub(r"\1", text)


def _short_form(text: str, *, case_sensitive: bool = False) -> str:
    """Like normalise, for short answers also without `code` backticks or a final period."""
    text = normalise(text, case_sensitive=case_sensitive)
    if len(text) > 1 and text.startswith("`") and text.endswith("`"):
        text = text.strip("`").strip()
    return text[:-1].rstrip() if text.endswith(".") and not text.endswith("..") else text


_QUOTED = re.compile(r"""(['"])(.*?)\1""")
_SIZE = re.compile(r"^torch\.size\((.*)\)$", re.IGNORECASE)
_OPEN = {"(": ")", "[": "]"}
# A bracket after one of these (or at the start) opens a literal, not a call or an index.
_LITERAL_BEFORE = set("([,=:")


def _value_form(text: str, *, case_sensitive: bool = False) -> str:
    """The short form, also blind to how a sequence is written: quotes around items dropped,
    ``torch.Size(...)`` and outer brackets unwrapped, ``[`` and ``(`` of literals alike, a
    trailing comma dropped. ``3, 1`` == ``(3, 1)`` == ``[3,1]`` == ``torch.Size([3, 1])``;
    ``'cpu'`` == ``cpu``. A call or index (``t[0]``, ``f(1)``) keeps its brackets."""
    text = _QUOTED.sub(r"\2", _short_form(text, case_sensitive=case_sensitive))
    while True:
        m = _SIZE.match(text)
        if m:
            text = m.group(1)
        inner = _unwrap(text)
        if inner is None and not m:
            break
        if inner is not None:
            text = inner
    text = _literal_brackets(text)
    return text[:-1] if text.endswith(",") else text


def _unwrap(text: str) -> str | None:
    """The inside of ``(...)`` or ``[...]`` when that one pair encloses the whole text."""
    if len(text) < 2 or text[0] not in _OPEN or text[-1] != _OPEN[text[0]]:
        return None
    depth = 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
            if depth == 0 and i != len(text) - 1:
                return None  # "(a)+(b)": the first pair closes early
    return text[1:-1]


def _literal_brackets(text: str) -> str:
    """Literal ``[...]`` written as ``(...)``; brackets of calls and indexing unchanged."""
    out: list[str] = []
    closers: list[str] = []
    for ch in text:
        if ch in _OPEN:
            literal = not out or out[-1] in _LITERAL_BEFORE or out[-1] == " "
            closers.append(")" if literal else _OPEN[ch])
            out.append("(" if literal else ch)
        elif ch in ")]" and closers:
            out.append(closers.pop())
        else:
            out.append(ch)
    return "".join(out)


def _same(answer: str, key: str, *, case_sensitive: bool = False) -> str | None:
    """How ``answer`` matches ``key``: "same" (as written, give or take spacing and case),
    "form" (only once sequences and quotes are normalised), or None."""
    if _short_form(answer, case_sensitive=case_sensitive) == _short_form(key, case_sensitive=case_sensitive):
        return "same"
    if _value_form(answer, case_sensitive=case_sensitive) == _value_form(key, case_sensitive=case_sensitive):
        return "form"
    return None


# ---------------------------------------------------------------- numbers

_POWER = re.compile(r"^(?:(?P<mant>[-+]?[\d.]+)\s*[x*]\s*)?10\s*(?:\^|\*\*)\s*(?P<exp>[-+]?\d+)$")


_THOUSANDS = re.compile(r"^[-+]?\d{1,3}(,\d{3})+(\.\d*)?$")


def parse_number(text: str) -> float | None:
    """A number as learners write it: ``0.001``, ``1e-3``, ``1E-3``, ``-.5``, ``1/1000``,
    ``1_000``, ``65,504``, ``10^-3``, ``2x10^-3``, ``2 * 10**-3``, ``50%`` (0.5); None if unreadable."""
    s = unicodedata.normalize("NFKC", text).translate(_LOOKALIKES).strip().replace("_", "").replace(" ", "")
    if not s:
        return None
    if _THOUSANDS.match(s):  # 65,504 as printed in tables (a lone comma stays unreadable)
        s = s.replace(",", "")
    scale = 1.0
    if s.endswith("%"):
        s, scale = s[:-1], 0.01
    try:
        return float(s) * scale
    except ValueError:
        pass
    if s.count("/") == 1:
        num, den = s.split("/")
        try:
            return float(Fraction(num) / Fraction(den)) * scale
        except (ValueError, ZeroDivisionError):
            return None
    m = _POWER.match(s.lower())
    if m:
        try:
            mant = float(m["mant"]) if m["mant"] else 1.0
            return mant * 10.0 ** int(m["exp"]) * scale
        except (ValueError, OverflowError):
            return None
    return None


def _fmt(x: float) -> str:
    return f"{x:g}" if math.isfinite(x) else str(x)


# ---------------------------------------------------------------- exceptions in predict cards

_EXC_NAME = re.compile(r"^(?:[A-Za-z_][\w.]*)?(Error|Exception|Warning|Interrupt|Exit|StopIteration)$")
_RAISES = re.compile(r"^(?:it\s+)?(?:raises?|throws?)\s*:?\s*(?:an?\s+)?", re.IGNORECASE)


def is_exception_key(key: str) -> bool:
    """Whether a predict card's key names an exception class (the code raises)."""
    return bool(_EXC_NAME.match(key.strip()))


def _exception_matches(answer: str, key: str) -> bool:
    """ "RuntimeError", "runtimeerror", "RuntimeError: view size is not ..." and "raises
    RuntimeError" all match RuntimeError; a dotted key also matches its last part."""
    a = _RAISES.sub("", unicodedata.normalize("NFKC", answer).strip())
    a = re.split(r"[\s:(]", a, maxsplit=1)[0].rstrip(".!").casefold()
    k = key.strip().casefold()
    return bool(a) and (a == k or a == k.rsplit(".", 1)[-1] or k == a.rsplit(".", 1)[-1])


# ---------------------------------------------------------------- cloze


def cloze_blanks(card: ClozeCard) -> list[list[str]]:
    """Each blank's accepted answers, in order (``{{view|reshape}}`` -> ["view", "reshape"])."""
    return [[alt.strip() for alt in m.group(1).split("|")] for m in CLOZE_BLANK.finditer(card.text)]


def cloze_prompt(card: ClozeCard) -> str:
    """The text with blanks shown as ``[1]____``, ``[2]____``..."""
    counter = iter(range(1, 1000))
    return CLOZE_BLANK.sub(lambda _: f"[{next(counter)}]____", card.text)


def split_cloze_answers(answer: str | list[str] | tuple[str, ...], blanks: int | None = None) -> list[str]:
    """A list as is; one string split on ';' or newlines. With ``blanks`` given and neither
    in the string, top-level commas separate too when that gives exactly ``blanks`` parts
    (``dtype, shape, device`` for three blanks; ``(3, 1)`` stays whole)."""
    if isinstance(answer, (list, tuple)):
        return [str(a) for a in answer]
    parts = re.split(r"[;\n]", answer)
    if len(parts) == 1 and blanks is not None and blanks > 1:
        by_comma = _top_level_split(answer)
        if len(by_comma) == blanks:
            return by_comma
    return parts


def _top_level_split(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return [*parts, text[start:]]


def choice_order(card: ChoiceCard, seed: str) -> list[int]:
    """The order a review shows a choice card's options in: position i shows option
    ``order[i]``. The same ``seed`` always gives the same order (see :func:`review_seed`)."""
    order = list(range(len(card.options)))
    random.Random(seed).shuffle(order)  # a str seed is hashed with SHA-512: stable across runs
    return order


def review_seed(pack: str, item: str, state: CardState | None) -> str:
    """Names one review of a card: the card plus its schedule before the review (reps and
    due time, None for a new card). Leaving and coming back gives the same seed (the same
    option order); answering moves the schedule on, so the next review shuffles afresh."""
    if state is None:
        return f"{pack}/{item}/new"
    return f"{pack}/{item}/{state.reps}/{state.due.isoformat()}"


# ---------------------------------------------------------------- grade


def grade(
    card: Card, answer: str | list[str] | tuple[str, ...], *, key: str | None = None, order: list[int] | None = None
) -> Grade:
    """Grade ``answer`` to ``card``.

    ``key`` (predict cards only) overrides the stored key, e.g. with the output of running
    the code just now; the stored key and ``accept`` still count. ``order`` (choice cards
    only) is the order the options were shown in (:func:`choice_order`): numbers and
    letters in the answer count in that order.
    """
    if isinstance(card, ChoiceCard):
        return _grade_choice(card, str(answer), order)
    if isinstance(card, ShortCard):
        return _grade_short(card, str(answer))
    if isinstance(card, NumericCard):
        return _grade_numeric(card, str(answer))
    if isinstance(card, PredictCard):
        return _grade_predict(card, str(answer), key)
    if isinstance(card, ClozeCard):
        return _grade_cloze(card, answer)
    raise TypeError(f"not a card: {type(card).__name__}")


def choice_index(card: ChoiceCard, answer: str, order: list[int] | None = None) -> int | None:
    """The 0-based option an answer picks: its number ("2"), letter ("b") or exact text.
    Numbers and letters count in the shown ``order`` (the given order when None)."""
    s = answer.strip().rstrip(".)").strip()
    n = len(card.options)
    shown = order if order is not None else list(range(n))
    if s.isdigit():
        i = int(s) - 1
        return shown[i] if 0 <= i < n else None
    if len(s) == 1 and s.isalpha():
        i = ord(s.casefold()) - ord("a")
        return shown[i] if 0 <= i < n else None
    wanted = _short_form(answer)
    for i, option in enumerate(card.options):
        if _short_form(option.text) == wanted:
            return i
    return None


def _grade_choice(card: ChoiceCard, answer: str, order: list[int] | None) -> Grade:
    shown = order if order is not None else list(range(len(card.options)))
    right = next(i for i, o in enumerate(card.options) if o.correct)
    expected = f"{shown.index(right) + 1}. {card.options[right].text}"
    i = choice_index(card, answer, shown)
    if i is None:
        return Grade(False, f"Answer with the number of an option, 1 to {len(card.options)}.", expected, retry=True)
    return Grade(i == right, without_verdict(card.options[i].feedback, i == right), expected)


_VERDICT_WORDS = {
    True: re.compile(r"^\s*(right|correct|yes|exactly|indeed)\s*[.,!;:]\s*", re.IGNORECASE),
    False: re.compile(r"^\s*(wrong|no|not quite|incorrect)\s*[.,!;:]\s*", re.IGNORECASE),
}


def without_verdict(feedback: str, correct: bool) -> str:
    """An option's feedback after the verdict the learner already sees: "Right. Hooks run..."
    is shown as "Correct. Hooks run...", not "Correct. Right. Hooks run..."."""
    rest = _VERDICT_WORDS[correct].sub("", feedback, count=1)
    if rest == feedback:
        return feedback
    return rest[:1].upper() + rest[1:]


def _grade_short(card: ShortCard, answer: str) -> Grade:
    expected = card.answers[0] if card.answers else f"an answer matching {card.regex}"
    if not answer.strip():
        return Grade(False, "No answer given.", expected)
    matches = [(a, _same(answer, a, case_sensitive=card.case_sensitive)) for a in card.answers]
    if any(how == "same" for _, how in matches):
        return Grade(True, "Correct.", expected)
    if card.regex is not None:
        flags = 0 if card.case_sensitive else re.IGNORECASE
        for candidate in (answer.strip(), normalise(answer, case_sensitive=True)):
            if re.fullmatch(card.regex, candidate, flags):
                return Grade(True, "Correct.", expected)
    written = next((a for a, how in matches if how == "form"), None)
    if written is not None:
        return Grade(True, f"Usually written: {written}", expected, written=written)
    if card.case_sensitive and any(_same(answer, a) for a in card.answers):
        return Grade(False, "Right word, but case matters here.", expected)
    return Grade(False, "Not quite.", expected)


def _grade_numeric(card: NumericCard, answer: str) -> Grade:
    tol = []
    if card.tolerance:
        tol.append(f"±{_fmt(card.tolerance)}")
    if card.rel_tolerance:
        tol.append(f"±{card.rel_tolerance:.3g} relative")
    expected = _fmt(card.answer) + (f" ({', '.join(tol)})" if tol else "")
    if not answer.strip():
        return Grade(False, "No answer given.", expected)
    x = parse_number(answer)
    if x is None:
        return Grade(
            False, "That is not a number I can read; write it like 0.001, 1e-3 or 1/1000.", expected, retry=True
        )
    # A hair of relative slack so 0.1 + 0.2 style float noise never fails an exact key.
    close = math.isclose(x, card.answer, rel_tol=max(card.rel_tolerance, 1e-9), abs_tol=card.tolerance)
    if close:
        return Grade(True, "Correct.", expected)
    direction = "high" if x > card.answer else "low"
    return Grade(False, f"Not quite: {_fmt(x)} is too {direction}.", expected)


def _grade_predict(card: PredictCard, answer: str, key: str | None) -> Grade:
    keys = [k for k in (key, card.expected) if k is not None and k.strip()]
    shown_key = keys[0].strip()
    if not answer.strip():
        return Grade(False, "No prediction given.", shown_key)
    for k in keys:
        if is_exception_key(k):
            if _exception_matches(answer, k):
                return Grade(True, f"It raises {k.strip()}.", shown_key)
        elif normalise(answer) == normalise(k):
            return Grade(True, "Correct.", shown_key)
    if any(normalise(answer) == normalise(a) for a in card.accept):
        return Grade(True, "Correct.", shown_key)
    if is_exception_key(shown_key):
        said_error = re.search(r"\b(error|exception|raises?|fails?|crash(es)?)\b", answer, re.IGNORECASE)
        if said_error:
            return Grade(False, f"It does raise, but the exception to name is {shown_key}.", shown_key)
        return Grade(False, f"It raises {shown_key}.", shown_key)
    if any(is_exception_key(w.rstrip(":")) for w in answer.split()[:1]):
        return Grade(False, "It runs without an exception.", shown_key)
    return Grade(False, "Not quite.", shown_key)


def _grade_cloze(card: ClozeCard, answer: str | list[str] | tuple[str, ...]) -> Grade:
    blanks = cloze_blanks(card)
    expected = "; ".join(alts[0] for alts in blanks)
    given = split_cloze_answers(answer, len(blanks))
    if len(blanks) == 1 and isinstance(answer, str) and len(given) > 1:
        given = [answer]  # one blank: a ';' is part of the answer, not a separator
    given = [g.strip() for g in given]
    given += [""] * (len(blanks) - len(given))
    if card.unordered:
        fits = _match_blanks(blanks, given)
    else:
        fits = {n: n for n in range(len(blanks)) if _fit(given[n], blanks[n])}
    wrong = [n for n in range(len(blanks)) if n not in fits]
    if not wrong:
        # Each blank as its key writes it, in the key's order; shown when the answer differs.
        in_order = all(fits[n] == n for n in fits)
        if in_order and all(_fit(given[n], blanks[n]) == "same" for n in fits):
            return Grade(True, "Correct.", expected)
        written = "; ".join(_written(given[fits[n]], blanks[n]) for n in range(len(blanks)))
        return Grade(True, f"Usually written: {written}", expected, written=written)
    if len(blanks) == 1:
        return Grade(False, "Not quite.", expected)
    if card.unordered:
        parts = [f"missing {blanks[n][0]!r}" for n in wrong]
    else:
        parts = [f"blank {n + 1} is {blanks[n][0]!r}" for n in wrong]
    return Grade(
        False, f"{len(blanks) - len(wrong)} of {len(blanks)} blanks right: " + ", ".join(parts) + ".", expected
    )


def _fit(given: str, alts: list[str]) -> str | None:
    """How an answer fits one blank: "same", "form" (see :func:`_same`) or None."""
    hows = [_same(given, a) for a in alts]
    return "same" if "same" in hows else ("form" if "form" in hows else None)


def _written(given: str, alts: list[str]) -> str:
    """The alternative an answer stands for, as the key writes it."""
    for how in ("same", "form"):
        for a in alts:
            if _same(given, a) == how:
                return a
    return alts[0]


def _match_blanks(blanks: list[list[str]], given: list[str]) -> dict[int, int]:
    """Blank -> the answer that fills it, in any order (unordered cloze cards): a maximum
    matching (augmenting paths; a card has a handful of blanks), preferring answers in place."""
    owner: dict[int, int] = {}  # answer index -> blank

    def place(b: int, seen: set[int]) -> bool:
        candidates = sorted(range(len(given)), key=lambda g: g != b)
        for g in candidates:
            if g in seen or not _fit(given[g], blanks[b]):
                continue
            seen.add(g)
            if g not in owner or place(owner[g], seen):
                owner[g] = b
                return True
        return False

    for b in range(len(blanks)):
        place(b, set())
    return {b: g for g, b in owner.items()}


# ---------------------------------------------------------------- leeches


def revisit_advice(lesson_title: str, card: Card) -> str:
    """Where to relearn the idea behind a card the learner keeps missing."""
    if getattr(card, "teaches", None):
        return f"Revisit lesson '{lesson_title}', section '{card.teaches}'."
    return f"Revisit lesson '{lesson_title}'."
