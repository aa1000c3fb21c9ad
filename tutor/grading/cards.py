"""Grading recall cards: ``grade(card, answer) -> Grade``. Pure Python: no torch, no textual.

Answers are compared after normalisation (see :func:`normalise`) so that a learner who
knows the answer is not marked wrong for spacing, case or Unicode look-alikes.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass
from fractions import Fraction

from tutor.packs.models import (
    CLOZE_BLANK,
    ChoiceCard,
    ClozeCard,
    NumericCard,
    PredictCard,
    ShortCard,
)


@dataclass(frozen=True)
class Grade:
    correct: bool
    feedback: str  # one or two sentences for the learner
    expected: str  # the answer key as shown after answering
    retry: bool = False  # the answer could not be read (e.g. option 7 of 3): ask again, do not grade


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


def split_cloze_answers(answer: str | list[str] | tuple[str, ...]) -> list[str]:
    """A list as is; one string split on ';' or newlines."""
    if isinstance(answer, (list, tuple)):
        return [str(a) for a in answer]
    return [part for part in re.split(r"[;\n]", answer)]


# ---------------------------------------------------------------- grade


def grade(card, answer, *, key: str | None = None) -> Grade:
    """Grade ``answer`` to ``card``.

    ``key`` (predict cards only) overrides the stored key, e.g. with the output of running
    the code just now; the stored key and ``accept`` still count.
    """
    if isinstance(card, ChoiceCard):
        return _grade_choice(card, str(answer))
    if isinstance(card, ShortCard):
        return _grade_short(card, str(answer))
    if isinstance(card, NumericCard):
        return _grade_numeric(card, str(answer))
    if isinstance(card, PredictCard):
        return _grade_predict(card, str(answer), key)
    if isinstance(card, ClozeCard):
        return _grade_cloze(card, answer)
    raise TypeError(f"not a card: {type(card).__name__}")


def choice_index(card: ChoiceCard, answer: str) -> int | None:
    """The 0-based option an answer picks: its number ("2"), letter ("b") or exact text."""
    s = answer.strip().rstrip(".)").strip()
    n = len(card.options)
    if s.isdigit():
        i = int(s) - 1
        return i if 0 <= i < n else None
    if len(s) == 1 and s.isalpha():
        i = ord(s.casefold()) - ord("a")
        return i if 0 <= i < n else None
    wanted = _short_form(answer)
    for i, option in enumerate(card.options):
        if _short_form(option.text) == wanted:
            return i
    return None


def _grade_choice(card: ChoiceCard, answer: str) -> Grade:
    right = next(i for i, o in enumerate(card.options) if o.correct)
    expected = f"{right + 1}. {card.options[right].text}"
    i = choice_index(card, answer)
    if i is None:
        return Grade(False, f"Answer with the number of an option, 1 to {len(card.options)}.", expected, retry=True)
    return Grade(i == right, card.options[i].feedback, expected)


def _grade_short(card: ShortCard, answer: str) -> Grade:
    expected = card.answers[0] if card.answers else f"an answer matching {card.regex}"
    if not answer.strip():
        return Grade(False, "No answer given.", expected)
    given = _short_form(answer, case_sensitive=card.case_sensitive)
    if any(given == _short_form(a, case_sensitive=card.case_sensitive) for a in card.answers):
        return Grade(True, "Correct.", expected)
    if card.regex is not None:
        flags = 0 if card.case_sensitive else re.IGNORECASE
        for candidate in (answer.strip(), normalise(answer, case_sensitive=True)):
            if re.fullmatch(card.regex, candidate, flags):
                return Grade(True, "Correct.", expected)
    if card.case_sensitive and any(_short_form(answer) == _short_form(a) for a in card.answers):
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


def _grade_cloze(card: ClozeCard, answer) -> Grade:
    blanks = cloze_blanks(card)
    expected = "; ".join(alts[0] for alts in blanks)
    given = split_cloze_answers(answer)
    if len(blanks) == 1 and isinstance(answer, str) and len(given) > 1:
        given = [answer]  # one blank: a ';' is part of the answer, not a separator
    given = [g.strip() for g in given]
    wrong = []
    for n, alts in enumerate(blanks):
        g = given[n] if n < len(given) else ""
        if not any(_short_form(g) == _short_form(a) for a in alts):
            wrong.append(n)
    if not wrong:
        return Grade(True, "Correct.", expected)
    if len(blanks) == 1:
        return Grade(False, "Not quite.", expected)
    parts = [f"blank {n + 1} is {blanks[n][0]!r}" for n in wrong]
    return Grade(
        False, f"{len(blanks) - len(wrong)} of {len(blanks)} blanks right: " + ", ".join(parts) + ".", expected
    )


# ---------------------------------------------------------------- leeches


def revisit_advice(lesson_title: str, card) -> str:
    """Where to relearn the idea behind a card the learner keeps missing."""
    if getattr(card, "teaches", None):
        return f"Revisit lesson '{lesson_title}', section '{card.teaches}'."
    return f"Revisit lesson '{lesson_title}'."
