"""A learner's object cannot declare itself equal to the expected value: comparisons ask the
expected value's type, and a subclass of a plain type that overrides how it compares is
reported as tampering."""

from test_checks_support import check, only, verify

from tutor.grading.verify import verdict_from_result

ALWAYS_EQUAL = "class Anything:\n    def __eq__(self, other):\n        return True\n    __hash__ = None\n"


def test_an_object_whose_eq_says_yes_does_not_pass_a_value_check():
    c = check(kind="value", expr="answer", expected="42")
    r = verify(ALWAYS_EQUAL + "answer = Anything()\n", "answer = 42", [c])
    assert not r["passed"] and "expected 42" in only(r)["message"], only(r)["message"]
    assert verify("answer = 42", "answer = 42", [c])["passed"]


def test_a_tuple_that_compares_equal_to_anything_is_tampering():
    c = check(kind="value", expr="t.stride()", expected="(1, 3)")
    code = (
        "import torch\nclass Yes(tuple):\n    def __eq__(self, other):\n        return True\n"
        "class T:\n    def stride(self):\n        return Yes((2, 1))\nt = T()\n"
    )
    verdict = verdict_from_result(verify(code, "t = torch.zeros(2, 3).t()", [c]))
    assert verdict.status == "fail"
    assert "t.stride() is a Yes, a subclass of tuple that overrides __eq__" in verdict.headline, verdict.feedback()


def test_a_named_tuple_of_the_learners_is_fine():
    c = check(kind="value", expr="p", expected="(1, 2)")
    code = "from collections import namedtuple\nP = namedtuple('P', 'x y')\np = P(1, 2)\n"
    assert verify(code, "p = (1, 2)", [c])["passed"]
