"""`kind: pytest`: an outside course's test file, run as it is against the learner's code.

The end-to-end test runs the example pack of docs/pack-format.md (examples/micrograd) through
`check`, `pack test`, `grade` and `grade --gradescope` with real kernels; the others run the
check library's judge and learner side in this process (tutor/checks/judge.run_local), with a
real pytest and a real hypothesis."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import TypeAdapter

from tutor.packs.loader import check_pack
from tutor.packs.models import Check, Mistake

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "micrograd"
LESSON = EXAMPLE / "engine"
DOC = REPO / "docs" / "pack-format.md"
MODULE = "micrograd.engine"

GOOD = """\
class Value:
    def __init__(self, data):
        self.data = data

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        return Value(self.data + other.data)

    def __repr__(self):
        return f"Value(data={self.data})"
"""

TESTS = """\
import pytest
from hypothesis import given, strategies as st

from micrograd.engine import Value


def test_add():
    assert (Value(2.0) + Value(1.0)).data == 3.0


@given(st.integers(-10, 10), st.integers(-10, 10))
def test_add_property(x, y):
    assert (Value(x) + Value(y)).data == x + y


class TestRepr:
    def test_repr(self):
        assert repr(Value(1)) == "Value(data=1)"
"""


def run(code: str, tests: str = TESTS, timeout: float = 10.0, setup: str = "", **fields) -> dict:
    from tutor.checks.judge import run_local

    check = TypeAdapter(Check).validate_python(
        {"kind": "pytest", "code": tests, "module": MODULE, "timeout": timeout, **fields}
    )
    mistakes = [Mistake(failed_check="adding", message="Add, do not subtract.", id="subtracts").model_dump()]
    result = run_local(
        {
            "setup": setup,
            "code": code,
            "solution": GOOD,
            "seed": 0,
            "checks": [check.model_dump()],
            "mistakes": mistakes if fields.get("id") == "adding" else [],
            "device": "cpu",
            "worlds": [{"seed": 1, "variant": ""}],
            "module": MODULE,
        }
    )
    json.dumps(result)  # crosses the kernel boundary as JSON
    return result


def by_id(result: dict) -> dict:
    """The results by test name (a check without an id names its tests pytest-N::TEST)."""
    return {c["id"].removeprefix("pytest-1::"): c for c in result["checks"]}


@pytest.mark.slow
def test_each_test_is_a_check_and_a_pass_holds_in_both_worlds():
    result = run(GOOD)
    assert result["passed"], result
    assert [c["id"] for c in result["checks"]] == [
        "pytest-1::test_add",
        "pytest-1::test_add_property",
        "pytest-1::TestRepr::test_repr",
    ]
    assert by_id(result)["test_add"]["message"] == "✓ test_add passed"
    assert all(c["kind"] == "pytest" for c in result["checks"])


@pytest.mark.slow
def test_failures_carry_pytests_assertion_and_hypothesis_example():
    result = run(GOOD.replace("self.data + other.data", "self.data - other.data"))
    checks = by_id(result)
    assert not result["passed"]
    add = checks["test_add"]["message"]
    # pytest's rewritten assertion, with the sub-values, at the test file's line
    assert add.startswith("test_add failed (line 8 of the tests): assert 1.0 == 3.0"), add
    assert "where 1.0 = (Value(data=2.0) + Value(data=1.0)).data" in add
    prop = checks["test_add_property"]["message"]
    assert "test_add_property(" in prop and "x=" in prop and "y=" in prop, prop  # the falsifying example
    assert checks["TestRepr::test_repr"]["passed"]
    assert "\x1b[" not in add + prop  # plain text, whatever the terminal


@pytest.mark.slow
def test_the_checks_id_names_its_tests_and_its_message_and_mistakes_lead_once():
    wrong = GOOD.replace("self.data + other.data", "self.data - other.data")
    result = run(wrong, id="adding", message="Look at __add__.")
    checks = by_id(result)
    assert list(checks) == ["adding::test_add", "adding::test_add_property", "adding::TestRepr::test_repr"]
    assert checks["adding::test_add"]["message"].startswith("Look at __add__.\ntest_add failed")
    assert checks["adding::test_add_property"]["message"].startswith("test_add_property failed")
    assert result["mistakes"] == ["Add, do not subtract."] and result["mistake_ids"] == ["subtracts"]


@pytest.mark.slow
def test_a_test_that_runs_forever_is_stopped_in_one_sentence_and_the_others_still_run():
    looping = GOOD.replace("return Value(self.data + other.data)", "while True:\n            pass")
    checks = by_id(run(looping, timeout=1))
    assert checks["test_add"]["message"] == "test_add ran past its time limit of 1 s and was stopped"
    assert checks["TestRepr::test_repr"]["passed"]


@pytest.mark.slow
def test_code_that_skips_its_tests_or_does_not_import_fails():
    skipping = GOOD.replace("        self.data = data\n", "        import pytest\n        pytest.skip('later')\n")
    checks = by_id(run(skipping))
    assert checks["test_add"]["message"].startswith("test_add failed"), checks
    assert "your code skipped this test (later)" in checks["test_add"]["message"]
    # Skips the test file asks for are the author's: they pass as skipped.
    marked = TESTS + (
        "\n\n@pytest.mark.skip(reason='not yet')\ndef test_later():\n    assert False\n"
        "\n\n@pytest.mark.xfail(reason='known')\ndef test_known():\n    assert False\n"
        "\n\ndef test_skips_itself():\n    pytest.skip('no GPU here')\n"
    )
    checks = by_id(run(GOOD, marked))
    assert checks["test_later"] == {**checks["test_later"], "passed": True, "message": "✓ test_later skipped: not yet"}
    assert checks["test_known"]["passed"] and checks["test_skips_itself"]["passed"], checks
    missing = run("class Valu:\n    pass\n")
    assert [c["message"] for c in missing["checks"]] == [
        "the test file could not be loaded: ImportError: cannot import name 'Value' from 'micrograd.engine' "
        "(unknown location)"
    ]
    broken = run("class Value:\n    def f(:\n")
    assert broken["checks"][0]["message"].startswith("the tests could not import your code: your code did not run")


@pytest.mark.slow
def test_the_learners_functions_live_in_the_module_the_tests_import():
    # A test that patches the module's globals changes what the learner's functions see, as
    # for an imported module; the code's __name__ is the module's.
    code = "SCALE = 1\n\ndef scaled(x):\n    return SCALE * x\n\nNAME = __name__\n"
    tests = (
        "import micrograd.engine as engine\n\n"
        "def test_patch(monkeypatch):\n"
        "    monkeypatch.setattr(engine, 'SCALE', 3)\n"
        "    assert engine.scaled(2) == 6\n\n"
        "def test_name():\n"
        "    assert engine.NAME == 'micrograd.engine'\n"
    )
    result = run(code, tests)
    assert result["passed"], result


@pytest.mark.slow
def test_a_test_the_file_defines_that_reports_nothing_fails():
    # Code that reaches into pytest (it shares the process) and drops a test from the run:
    # the judge knows the file's tests, so a missing result is a failure, not a pass.
    dropping = GOOD + (
        "\nimport _pytest.python as _p\n"
        "_collect = _p.Module.collect\n"
        "_p.Module.collect = lambda self: [i for i in _collect(self) if i.name != 'test_add']\n"
    )
    # A fixture named test_... and a Test class with __init__ are not tests: nothing missing there.
    tests = TESTS + (
        "\n\n@pytest.fixture\ndef test_data():\n    return 1\n"
        "\n\nclass TestHelper:\n    def __init__(self):\n        pass\n\n    def test_not_collected(self):\n        pass\n"
    )
    assert run(GOOD, tests)["passed"]
    checks = by_id(run(dropping, tests))
    assert checks["test_add"] == {**checks["test_add"], "passed": False}
    assert checks["test_add"]["message"] == "test_add failed: no result came back for this test"


def test_validate_says_what_is_wrong_with_a_pytest_check(tmp_path: Path):
    (tmp_path / "one").mkdir()
    (tmp_path / "pack.yaml").write_text("id: p\ntitle: P\nversion: '1'\nlessons: [one]\n")
    (tmp_path / "one" / "lesson.yaml").write_text(
        "id: one\ntitle: One\nintuition: Why.\nexercises:\n"
        "  - id: ex\n    title: Ex\n    prompt: Do it.\n    solution: 'x = 1'\n    checks:\n"
        "      - kind: pytest\n        code: 'x = 1'\n        module: torch.engine\n"
        "      - kind: pytest\n        code: |\n          def test_x(:\n        module: other\n"
    )
    _, problems = check_pack(tmp_path, cache=False)
    text = "\n".join(map(str, problems))
    assert "torch is a module the tests need as it is" in text
    assert "the test file defines no test" in text
    assert "the test file does not parse" in text
    assert "different modules (other, torch.engine)" in text
    assert re.search(r"lesson\.yaml:\d+:\d+: exercises\[0\]\.checks\[0\]\.module", text), text


def _doc_block(lang: str, name: str) -> str:
    found = re.search(rf"```{lang} {re.escape(name)}\n(.*?)```", DOC.read_text(), re.DOTALL)
    assert found, name
    return found.group(1)


def test_the_docs_example_is_the_example_pack():
    """docs/pack-format.md shows the example pack's lesson and its test file as they are."""
    assert _doc_block("yaml", "examples/micrograd/engine/lesson.yaml") == (LESSON / "lesson.yaml").read_text()
    assert _doc_block("python", "examples/micrograd/engine/test_engine.py") == (LESSON / "test_engine.py").read_text()
    pack, problems = check_pack(EXAMPLE, cache=False)
    assert problems == [] and pack is not None, problems


def cli(*args: str, home: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    env = {**os.environ, "PTFUND_TUTOR_HOME": str(home)}
    env.pop("PTFUND_TUTOR_CACHE", None)
    return subprocess.run(
        [sys.executable, "-m", "tutor", "--pack", str(EXAMPLE), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


@pytest.mark.slow
def test_the_example_pack_through_check_pack_test_grade_and_gradescope(tmp_path: Path):
    home = tmp_path / "home"
    good, wrong = LESSON / "engine.py", LESSON / "wrong_relu.py"

    r = cli("check", "engine/value", "--file", str(good), "--trust", "--json", home=home)
    assert r.returncode == 0, r.stdout + r.stderr
    names = [c["id"] for c in json.loads(r.stdout)["checks"]]
    assert names == [f"engine-tests::{n}" for n in ("test_sanity_check", "test_more_ops", "test_relu")] + [
        "engine-tests::test_product_rule",
        "engine-tests::test_a_node_used_twice_adds_both_gradients",
    ]
    r = cli("check", "engine/value", "--file", str(wrong), "--trust", home=home)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "✗ test_relu failed (line 79 of the tests): assert 1 == 0" in r.stdout
    assert "where 1 = Value(data=-3.0, grad=1).grad" in r.stdout
    assert "✓ test_product_rule passed" in r.stdout

    # The reference passes every test, each wrong solution fails one (mutants: run by hand,
    # `ptfund-tutor --pack examples/micrograd pack test examples/micrograd`).
    r = cli("pack", "test", str(EXAMPLE), "--trust", "--mutants", "off", home=home)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "solution" in r.stdout and r.stdout.count("fails as it should") == 3  # starter + 2 wrong

    subs = tmp_path / "subs"
    for learner, source in (("alice", good), ("bob", wrong)):
        (subs / learner / "engine").mkdir(parents=True)
        (subs / learner / "engine" / "value.py").write_text(source.read_text())
    r = cli("grade", str(subs), "--trust", "--jobs", "2", home=home)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = {row["learner"]: row for row in csv.DictReader(io.StringIO(r.stdout))}
    assert rows["alice"]["engine/value"] == "pass" and rows["bob"]["engine/value"] == "fail", rows

    autograder = tmp_path / "autograder"
    (autograder / "submission" / "engine").mkdir(parents=True)
    (autograder / "submission" / "engine" / "value.py").write_text(wrong.read_text())
    r = cli("grade", "--gradescope", str(autograder), "--trust", home=home)
    assert r.returncode == 0, r.stdout + r.stderr
    results = json.loads((autograder / "results" / "results.json").read_text())
    [test] = results["tests"]
    assert test["status"] == "failed"
    assert "✗ test_relu failed (line 79 of the tests): assert 1 == 0" in test["output"]
    assert "✓ test_product_rule passed" in test["output"]


def test_hiding_and_gradescope_tell_a_pytest_checks_lines_apart():
    """A pytest check is one verdict line per test: the checks after it keep their places."""
    from tutor.grading.hiding import check_of_lines, conceal
    from tutor.grading.verdict import CheckLine, Verdict
    from tutor.packs.models import Exercise

    exercise = Exercise(
        id="ex",
        title="Ex",
        prompt="Do it.",
        solution="x = 1",
        checks=[
            {"kind": "value", "expr": "x"},
            {"kind": "pytest", "code": TESTS, "module": MODULE},
            {"kind": "pytest", "id": "more", "code": TESTS, "module": MODULE},
            {"kind": "value", "expr": "x", "hidden": True},
        ],
    )
    lines = [
        CheckLine(None, "value", True, "x matches"),
        CheckLine("pytest-2::test_add", "pytest", False, "test_add failed: assert 1 == 2"),
        CheckLine("pytest-2::test_add_property", "pytest", True, "test_add_property passed"),
        CheckLine("more::test_add", "pytest", True, "test_add passed"),
        CheckLine(None, "value", False, "x is 1, expected 2"),
    ]
    assert check_of_lines(lines, exercise) == [0, 1, 1, 2, 3]
    verdict = conceal(Verdict("fail", "2 of 5 checks fail.", checks=lines), exercise)
    assert [c.hidden for c in verdict.checks] == [False, False, False, False, True]
    assert verdict.checks[1].message == "test_add failed: assert 1 == 2"
