"""Grading every card type, near misses included (spacing, case, Unicode, number formats)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tutor.grading.cards import (
    choice_order,
    cloze_blanks,
    cloze_prompt,
    grade,
    is_exception_key,
    normalise,
    parse_number,
    review_seed,
    revisit_advice,
    split_cloze_answers,
)
from tutor.packs.models import ChoiceCard, ChoiceOption, ClozeCard, NumericCard, PredictCard, ShortCard


def choice() -> ChoiceCard:
    return ChoiceCard(
        id="copy",
        type="choice",
        prompt="Which call always returns a copy?",
        teaches="Strides",
        options=[
            ChoiceOption(text="t.view(-1)", feedback="view never copies: it needs compatible strides."),
            ChoiceOption(text="t.clone()", correct=True, feedback="clone always copies."),
            ChoiceOption(text="t.reshape(-1)", feedback="reshape copies only when it must."),
        ],
    )


def short(**kw) -> ShortCard:
    return ShortCard(id="s", type="short", prompt="p", **{"answers": ["(1, 3)"], **kw})


def numeric(**kw) -> NumericCard:
    return NumericCard(id="n", type="numeric", prompt="p", **{"answer": 0.001, **kw})


def predict(expected: str, **kw) -> PredictCard:
    return PredictCard(id="p", type="predict", prompt="p", code="...", expected=expected, **kw)


def cloze(text="A {{view|reshape}} shares {{storage}} with its base.") -> ClozeCard:
    return ClozeCard(id="z", type="cloze", prompt="Fill in.", text=text)


# ---------------------------------------------------------------- choice


@pytest.mark.parametrize("answer", ["2", " 2 ", "2.", "b", "B", "b)", "t.clone()", "  T.CLONE() "])
def test_choice_right_by_number_letter_or_text(answer):
    g = grade(choice(), answer)
    assert g.correct and g.feedback == "clone always copies." and g.expected == "2. t.clone()"


@pytest.mark.parametrize(
    ("right", "wrong", "shown_right", "shown_wrong"),
    [
        ("Right. clone always copies.", "No, view never copies.", "Clone always copies.", "View never copies."),
        ("Correct! It copies.", "Wrong: a view.", "It copies.", "A view."),
        ("Right, it copies.", "Right. (A trap.)", "It copies.", "Right. (A trap.)"),  # a disagreeing word stays
        ("Rightly so.", "Nothing copies.", "Rightly so.", "Nothing copies."),
    ],
)
def test_choice_feedback_does_not_repeat_the_verdict(right, wrong, shown_right, shown_wrong):
    card = ChoiceCard(
        id="copy",
        type="choice",
        prompt="Which call always returns a copy?",
        options=[
            ChoiceOption(text="t.view(-1)", feedback=wrong),
            ChoiceOption(text="t.clone()", correct=True, feedback=right),
        ],
    )
    assert grade(card, "2").feedback == shown_right
    assert grade(card, "1").feedback == shown_wrong


@pytest.mark.parametrize(
    "answer,feedback", [("1", "view never"), ("c", "reshape copies"), ("t.view(-1)", "view never")]
)
def test_choice_wrong_gives_that_options_feedback(answer, feedback):
    g = grade(choice(), answer)
    assert not g.correct and not g.retry and g.feedback.startswith(feedback)


@pytest.mark.parametrize("answer", ["4", "0", "z", "", "something else"])
def test_choice_unreadable_asks_again(answer):
    g = grade(choice(), answer)
    assert g.retry and not g.correct and "1 to 3" in g.feedback


# ---------------------------------------------------------------- short


@pytest.mark.parametrize("answer", ["(1, 3)", "(1,3)", "( 1 , 3 )", "  (1,\t3) ", "(1, 3).", "`(1, 3)`", "（1，3）"])
def test_short_near_misses_of_spacing_and_unicode_are_right(answer):
    assert grade(short(), answer).correct


@pytest.mark.parametrize("answer", ["(3, 1)", "(1, 3, 1)", "3, 1", "1 3", "t(1, 3)", ""])
def test_short_wrong(answer):
    g = grade(short(), answer)
    assert not g.correct and g.expected == "(1, 3)"


def test_short_case_folds_unless_case_sensitive():
    card = short(answers=["float32"])
    assert grade(card, "Float32").correct and grade(card, "FLOAT32").correct
    strict = short(answers=["torch.float32"], case_sensitive=True)
    assert grade(strict, "torch.float32").correct
    g = grade(strict, "Torch.Float32")
    assert not g.correct and "case" in g.feedback


def test_short_regex_is_a_full_match():
    card = short(answers=[], regex=r"torch\.Size\(\[2,\s*3\]\)|\(2,\s*3\)")
    assert grade(card, "torch.Size([2, 3])").correct
    assert grade(card, "(2,3)").correct
    assert grade(card, "TORCH.SIZE([2,3])").correct  # case-insensitive by default
    assert not grade(card, "torch.Size([2, 3]) maybe").correct
    assert "matching" in grade(card, "x").expected


# ---------------------------------------------------------------- numeric


@pytest.mark.parametrize(
    "answer", ["0.001", "1e-3", "1E-3", "1e-03", ".001", "1/1000", "10^-3", "1x10^-3", "1 * 10**-3", "0.1%", "0.00100"]
)
def test_numeric_formats(answer):
    assert grade(numeric(), answer).correct, answer


def test_numeric_tolerances():
    card = numeric(answer=0.5, tolerance=0.01)
    assert grade(card, "0.509").correct and grade(card, "0.491").correct
    assert not grade(card, "0.52").correct
    rel = numeric(answer=1000, rel_tolerance=0.01)
    assert grade(rel, "1e3").correct and grade(rel, "1009").correct and not grade(rel, "1011").correct
    exact = numeric(answer=0.3)
    assert grade(exact, "0.30000000000000004").correct  # float noise is not a wrong answer
    assert not grade(exact, "0.31").correct


def test_numeric_feedback_and_unreadable():
    g = grade(numeric(), "0.01")
    assert not g.correct and "too high" in g.feedback and g.expected == "0.001"
    g = grade(numeric(), "one thousandth")
    assert g.retry and "number" in g.feedback
    assert "relative" in grade(numeric(rel_tolerance=0.05), "2").expected


def test_parse_number():
    assert parse_number("−2.5") == -2.5  # Unicode minus
    assert parse_number("1_000") == 1000
    assert parse_number("65,504") == 65504 and parse_number("1,5") is None  # thousands, not a decimal comma
    assert parse_number("3/4") == 0.75
    assert parse_number("1/0") is None
    assert parse_number("abc") is None and parse_number("") is None


# ---------------------------------------------------------------- predict


@pytest.mark.parametrize(
    "answer",
    [
        "RuntimeError",
        "runtimeerror",
        " RUNTIMEERROR ",
        "RuntimeError: view size is not compatible",
        "raises RuntimeError",
        "It raises a RuntimeError.",
        "RuntimeError(...)",
    ],
)
def test_predict_exception_key_accepts_the_class_name_with_or_without_message(answer):
    g = grade(predict("RuntimeError"), answer)
    assert g.correct, answer


def test_predict_exception_key_rejects_vague_or_other_exceptions():
    g = grade(predict("RuntimeError"), "error")
    assert not g.correct and "RuntimeError" in g.feedback and "does raise" in g.feedback
    assert not grade(predict("RuntimeError"), "ValueError").correct
    assert not grade(predict("RuntimeError"), "tensor([1., 2.])").correct
    assert grade(predict("torch.OutOfMemoryError"), "OutOfMemoryError").correct


def test_predict_output_near_misses():
    card = predict("torch.Size([2, 3])\ntensor([[1., 2., 3.],\n        [4., 5., 6.]])")
    assert grade(card, "torch.Size([2,3]) tensor([[1.,2.,3.],[4.,5.,6.]])").correct
    assert grade(card, "torch.size([2, 3])  tensor([[1., 2., 3.], [4., 5., 6.]])").correct
    assert not grade(card, "torch.Size([2, 3])").correct
    g = grade(card, "RuntimeError")
    assert not g.correct and "without an exception" in g.feedback


def test_predict_accept_list_and_live_key():
    card = predict("(2, 3)", accept=["torch.Size([2, 3])"])
    assert grade(card, "torch.Size([2,3])").correct
    # the live run's key counts (e.g. a device string differs from the stored key)
    live = predict("tensor([1.])", accept=[])
    assert grade(live, "tensor([1.], device='cuda:0')", key="tensor([1.], device='cuda:0')").correct
    assert grade(live, "tensor([1.])", key="tensor([1.], device='cuda:0')").correct
    assert grade(live, "x", key="tensor([1.], device='cuda:0')").expected == "tensor([1.], device='cuda:0')"


def test_is_exception_key():
    assert is_exception_key("RuntimeError") and is_exception_key("torch.OutOfMemoryError")
    assert is_exception_key("StopIteration") and is_exception_key("KeyboardInterrupt")
    assert not is_exception_key("tensor([1.])") and not is_exception_key("True") and not is_exception_key("Error x")


# ---------------------------------------------------------------- cloze


def test_cloze_blanks_and_prompt():
    card = cloze()
    assert cloze_blanks(card) == [["view", "reshape"], ["storage"]]
    assert cloze_prompt(card) == "A [1]____ shares [2]____ with its base."


@pytest.mark.parametrize(
    "answer", ["view; storage", "Reshape;STORAGE", "view\nstorage", ["view", "storage"], " view ;  storage "]
)
def test_cloze_right(answer):
    g = grade(cloze(), answer)
    assert g.correct and g.expected == "view; storage"


def test_cloze_partly_wrong_names_the_blank():
    g = grade(cloze(), "view; memory")
    assert not g.correct and "1 of 2" in g.feedback and "blank 2" in g.feedback and "storage" in g.feedback
    g = grade(cloze(), "view")
    assert not g.correct and "blank 2" in g.feedback


def test_cloze_blank_normalised_like_short():
    card = cloze("The shape is {{(1, 3)}}.")
    assert grade(card, "(1,3)").correct
    one = cloze("Separate with {{a;b}}.")  # a single blank: ';' belongs to the answer
    assert grade(one, "a;b").correct


def test_split_cloze_answers():
    assert split_cloze_answers("a; b\nc") == ["a", " b", "c"]
    assert split_cloze_answers(("x", "y")) == ["x", "y"]
    # commas separate only when they give exactly one part per blank, outside brackets
    assert split_cloze_answers("a, b, c", 3) == ["a", " b", " c"]
    assert split_cloze_answers("(3, 1), b", 2) == ["(3, 1)", " b"]
    assert split_cloze_answers("a, b, c", 2) == ["a, b, c"]


# ---------------------------------------------------------------- answers in another form


@pytest.mark.parametrize("answer", ["3, 1", "[3,1]", "[3, 1]", "torch.Size([3, 1])", "(3, 1,)", "'3', '1'"])
def test_short_sequences_in_any_bracket_form_are_right_and_show_the_key(answer):
    g = grade(short(answers=["(3, 1)"]), answer)
    assert g.correct and g.written == "(3, 1)" and g.feedback == "Usually written: (3, 1)"


def test_short_same_form_says_nothing_more_and_quotes_do_not_matter():
    g = grade(short(answers=["(3, 1)"]), "( 3,1 )")
    assert g.correct and g.written is None and g.feedback == "Correct."
    assert grade(short(answers=["cpu"]), "'cpu'").correct
    assert grade(short(answers=['"cuda:0"']), "cuda:0").correct
    nested = short(answers=["[[1, 2], [3, 4]]"])
    assert grade(nested, "((1,2),(3,4))").correct


def test_short_calls_and_indexing_keep_their_brackets():
    assert not grade(short(answers=["t[0]"]), "t(0)").correct
    assert not grade(short(answers=["x.view(2, 3)"]), "x.view[2, 3]").correct


def unordered(**kw) -> ClozeCard:
    text = "Every tensor carries a {{dtype}}, a {{shape}} and a {{device|the device}}."
    return ClozeCard(id="u", type="cloze", prompt="Fill in.", text=text, **kw)


@pytest.mark.parametrize("answer", ["device; dtype; shape", "shape, device, dtype", ["the device", "shape", "dtype"]])
def test_unordered_cloze_takes_any_order_and_shows_the_key_order(answer):
    g = grade(unordered(unordered=True), answer)
    assert g.correct and g.written in ("dtype; shape; device", "dtype; shape; the device")
    assert g.feedback == f"Usually written: {g.written}"


def test_unordered_cloze_in_key_order_is_plain_correct_and_misses_name_the_missing():
    assert grade(unordered(unordered=True), "dtype; shape; device").feedback == "Correct."
    g = grade(unordered(unordered=True), "dtype; dtype; device")
    assert not g.correct and g.feedback == "2 of 3 blanks right: missing 'shape'."
    g = grade(unordered(), "device; dtype; shape")  # ordered: the order counts
    assert not g.correct and "0 of 3" in g.feedback


def test_unordered_needs_two_blanks():
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="two or more"):
        ClozeCard(id="u", type="cloze", prompt="p", text="one {{blank}}", unordered=True)


# ---------------------------------------------------------------- shuffled choice options


class _State:
    def __init__(self, reps, due):
        self.reps, self.due = reps, due


def test_choice_order_is_stable_per_review_and_changes_between_reviews():
    from datetime import datetime, timedelta, timezone

    card = choice()
    t0 = datetime(2024, 5, 1, tzinfo=timezone.utc)
    first = choice_order(card, review_seed("p", "l/copy", None))
    assert first == choice_order(card, review_seed("p", "l/copy", None))  # resumed: same order
    assert sorted(first) == [0, 1, 2]
    orders = {
        tuple(choice_order(card, review_seed("p", "l/copy", _State(n, t0 + timedelta(days=n))))) for n in range(30)
    }
    assert len(orders) > 1  # later reviews reshuffle
    # the right option (index 1 in the file) lands in every position over the reviews
    assert {o.index(1) for o in orders} == {0, 1, 2}


def test_choice_numbers_and_letters_count_in_the_shown_order():
    card = choice()
    order = [2, 0, 1]  # shows reshape, view, clone
    g = grade(card, "3", order=order)
    assert g.correct and g.expected == "3. t.clone()"
    g = grade(card, "a", order=order)  # reshape's own feedback follows it
    assert not g.correct and g.feedback == "reshape copies only when it must." and g.expected == "3. t.clone()"
    assert grade(card, "t.clone()", order=order).correct


# ---------------------------------------------------------------- properties and advice


@given(st.text(max_size=40))
def test_normalise_is_idempotent(text):
    once = normalise(text)
    assert normalise(once) == once


@given(st.text(alphabet="(),[] 0123456789abc\t", max_size=30))
def test_whitespace_never_matters_around_punctuation(text):
    spaced = text.replace(",", " , ").replace("(", " ( ").replace(")", " ) ")
    assert normalise(spaced) == normalise(text)


def test_revisit_advice_names_lesson_and_section():
    assert revisit_advice("Views, strides and copies", choice()) == (
        "Revisit lesson 'Views, strides and copies', section 'Strides'."
    )
    assert revisit_advice("Tensors", short()) == "Revisit lesson 'Tensors'."


@pytest.mark.parametrize(
    "answer", ["t = t.to(DEVICE)", "t=t.to(DEVICE)", "t = t.to(device=DEVICE)", "`t = t.to(device = DEVICE)`"]
)
def test_builtin_to_returns_card_takes_the_keyword_spelling_too(answer):
    from tutor.packs.catalog import Catalog

    [ref] = [r for r in Catalog.load([]).cards("tensors") if r.card.id == "to-returns"]
    assert grade(ref.card, answer).correct
    assert not grade(ref.card, "t.to(device=DEVICE)").correct
