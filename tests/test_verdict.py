"""Verdicts from the check library's results: what the learner reads, each cause said once."""

from __future__ import annotations

from tutor.grading.verify import verdict_from_result


def result(passed, checks, mistakes=(), error=None):
    return {"passed": passed, "checks": list(checks), "mistakes": list(mistakes), "error": error}


def chk(passed, message, id=None, kind="tensor"):
    return {"id": id, "kind": kind, "passed": passed, "message": message, "expected": None, "actual": None}


def test_pass_has_no_nagging_mistakes_and_one_mark():
    v = verdict_from_result(result(True, [chk(True, "✓ t has shape (2, 3)")], mistakes=["broad condition fired"]))
    assert v.passed and v.mistakes == []
    assert v.feedback() == "The check passes.\n✓ t has shape (2, 3)"


def test_mistakes_lead_and_a_cause_is_said_once():
    plain = "model.mean is a plain tensor attribute: use register_buffer"
    v = verdict_from_result(
        result(
            False,
            [
                chk(False, f"✗ {plain}", kind="module"),
                chk(False, plain, id="round-trip", kind="state_dict"),
                chk(True, "output has the expected values"),
            ],
            mistakes=["Register mean with self.register_buffer.", "Register mean with self.register_buffer."],
        )
    )
    assert v.status == "fail" and v.headline == "2 of 3 checks fail."
    assert v.lines() == [
        ("→", "Register mean with self.register_buffer."),
        ("✗", plain),
        ("✗", "round-trip: fails for the same reason as above"),
        ("✓", "output has the expected values"),
    ]


def test_failing_checks_come_first_in_the_text_and_in_the_app():
    # In the app's checks pane at 80x24 only the first lines show: a pass listed first hid
    # the one check that failed below it.
    from tutor.app.widgets.check_results import verdict_content

    v = verdict_from_result(
        result(
            False,
            [
                chk(True, "a has the expected gradient"),
                chk(False, "c.backward() must leave the gradients", id="backward-ran"),
                chk(True, "b has the expected gradient"),
                chk(False, "c has no grad_fn", id="c"),
            ],
        )
    )
    order = ["c.backward() must leave", "c has no grad_fn", "a has the expected", "b has the expected"]
    assert [text for _, text in v.lines()] == [
        "c.backward() must leave the gradients",
        "c has no grad_fn",
        "a has the expected gradient",
        "b has the expected gradient",
    ]
    shown = verdict_content(v).plain
    assert [shown.index(part) for part in order] == sorted(shown.index(part) for part in order)


def test_learner_error_and_authoring_error():
    err = {
        "stage": "code",
        "ename": "RuntimeError",
        "evalue": "view size is not compatible",
        "line": 3,
        "traceback": ['  File "<your code>", line 3, in <module>', "RuntimeError: view size is not compatible"],
    }
    v = verdict_from_result(result(False, [chk(False, "t is not defined: your code stopped at line 3")], error=err))
    assert v.status == "error" and v.headline == "Your code raised RuntimeError at line 3: view size is not compatible"
    assert "<your code>" in v.feedback()
    bad = dict(err, stage="setup", ename="NameError", evalue="name 'x' is not defined")
    v = verdict_from_result(result(False, [], error=bad))
    assert v.status == "authoring-error" and "its setup code raised NameError" in v.headline


def test_crash_and_input_are_told_plainly():
    from tutor.engine.events import RunResult
    from tutor.engine.faults import crashed
    from tutor.grading.verify import verdict_from_run

    v = verdict_from_run(RunResult(status="crashed", message=crashed(-11)), 20)
    assert v.status == "crashed"
    assert v.headline == "Your code crashed the Python kernel (segmentation fault)."
    err = {
        "stage": "code",
        "ename": "StdinNotImplementedError",
        "evalue": "raw_input was called",
        "line": 2,
        "traceback": [],
    }
    v = verdict_from_result(result(False, [], error=err))
    assert (
        v.headline
        == "Your code called input() at line 2: checks run without a keyboard, so give the value in the code instead."
    )
