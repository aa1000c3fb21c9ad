"""The class report in the app: the report.json `grade --report` wrote, for a pack the app
has loaded, shown as pass rates and ranked mistakes (no kernel, no torch in the UI)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_app_support import make_app, make_pack, wait_for, wait_ready

from tutor.grading.classreport import write as write_report
from tutor.grading.gradebook import Cell, Gradebook, Row
from tutor.grading.report_file import INDEX, load, recorded, remember
from tutor.grading.submissions import Learner, columns_for
from tutor.grading.verdict import CheckLine, Verdict
from tutor.packs.catalog import Catalog

WRONG_DTYPE = "t is float32, the default: pass dtype=torch.float64."
WRONG_SHAPE = "t has the wrong shape"


@pytest.fixture
def pack(tmp_path: Path) -> Path:
    return make_pack(tmp_path / "pack")  # the app tests' pack: apptest, basics/zeros first


def _verdict(passed: bool, mistake: str | None = None) -> Verdict:
    if passed:
        return Verdict("pass", "The check passes.", checks=[CheckLine("t-matches", "tensor", True, "t matches")])
    return Verdict(
        "fail",
        "The check fails.",
        checks=[CheckLine("t-matches", "tensor", False, "t differs")],
        mistakes=[mistake] if mistake else [],
        mistake_ids=[f"m-{abs(hash(mistake)) % 10**6}"] if mistake else [],
    )


def _class(pack: Path) -> Gradebook:
    """Six learners on basics/zeros: 2 right, 3 with the dtype mistake, 1 with the shape one;
    [b]bold[/b] is a learner's folder name, never markup."""
    columns = columns_for([r for r in Catalog.load([str(pack)], builtin=False).exercises() if r.key == "basics/zeros"])
    plan = [(True, None), (True, None), (False, WRONG_DTYPE), (False, WRONG_DTYPE), (False, WRONG_DTYPE)]
    plan.append((False, WRONG_SHAPE))
    names = ["ann", "bob", "cy", "[b]bold[/b]", "dee", "eve"]
    rows = []
    for name, (passed, mistake) in zip(names, plan, strict=True):
        verdict = _verdict(passed, mistake)
        rows.append(Row(Learner(name, pack), {columns[0].name: Cell(verdict.status, verdict)}))
    return Gradebook(columns, rows)


def _report(pack: Path, data: Path, folder: Path) -> Path:
    write_report(folder, _class(pack))
    remember(data, folder, ["apptest"])
    return folder / "report.json"


def test_grade_records_the_latest_report_per_pack(tmp_path: Path):
    data = tmp_path / "data"
    assert recorded(data, ["apptest"]) == []  # no index yet
    remember(data, tmp_path / "week1", ["apptest", "other"])
    remember(data, tmp_path / "week2", ["apptest"])
    assert recorded(data, ["apptest", "other", "unknown"]) == [
        (tmp_path / "week2" / "report.json").resolve(),
        (tmp_path / "week1" / "report.json").resolve(),
    ]
    (data / INDEX).write_text("{not json")
    assert recorded(data, ["apptest"]) == []  # a damaged index hides the reports, nothing more


def test_a_report_that_is_not_one_is_one_sentence(tmp_path: Path):
    path = tmp_path / "report.json"
    path.write_text(json.dumps({"learners": "many"}))
    with pytest.raises(Exception, match=r"is not a class report of this version \(at learners"):
        load(path)
    with pytest.raises(Exception, match=r"cannot read the class report .*no such file"):
        load(tmp_path / "missing.json")


async def test_the_app_shows_pass_rates_and_ranked_mistakes(pack: Path, tmp_path: Path):
    from tutor.app.screens.class_report import ClassReportScreen

    data = tmp_path / "data"
    path = _report(pack, data, tmp_path / "week1")
    app = make_app(pack, data, kernels=False)
    async with app.run_test(size=(120, 50)) as pilot:
        await wait_ready(pilot)
        assert app.class_reports == [path.resolve()]
        commands = [c.title for c in app.get_system_commands(app.screen)]
        assert "Class report" in commands
        app.open_class_report(app.class_reports[0])
        await wait_for(pilot, lambda: isinstance(app.screen, ClassReportScreen), 10, "the class report")
        screen = app.screen
        await wait_for(pilot, lambda: screen.query_one("#mistake-table").row_count == 2, 10, "the ranked mistakes")
        mistakes = screen.query_one("#mistake-table")
        rows = [[str(cell) for cell in mistakes.get_row_at(i)] for i in range(2)]
        assert rows[0][:4] == ["3", "50%", "basics/zeros", "authored"] and rows[0][4] == WRONG_DTYPE
        assert rows[1][:2] == ["1", "17%"] and rows[1][4] == WRONG_SHAPE
        checks = screen.query_one("#check-table")
        assert [str(c) for c in checks.get_row_at(0)] == ["basics/zeros", "t-matches", "2/6", "33%"]
        bars = str(screen.query_one("#pass-rates").render())
        assert "basics/zeros" in bars and "33% (2 of 6)" in bars
        assert "6 learners, 1 exercises (apptest" in str(screen.query_one("#report-summary").render())
        mistakes.focus()
        await pilot.pause()
        who = str(screen.query_one("#mistake-who").render())
        assert "made by: cy, [b]bold[/b], dee" in who, who
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, ClassReportScreen), 10, "back")


async def test_a_broken_report_is_said_on_the_screen(pack: Path, tmp_path: Path):
    from tutor.app.screens.class_report import ClassReportScreen

    data = tmp_path / "data"
    path = _report(pack, data, tmp_path / "week1")
    path.write_text("[1, 2")
    app = make_app(pack, data, kernels=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        app.open_class_report(app.class_reports[0])
        await wait_for(pilot, lambda: isinstance(app.screen, ClassReportScreen), 10, "the class report")
        screen = app.screen
        said = lambda: "cannot read the class report" in str(screen.query_one("#report-summary").render())  # noqa: E731
        await wait_for(pilot, said, 10, "the sentence")


def test_the_class_report_screen_imports_no_torch():
    code = "import tutor.app.screens.class_report, tutor.grading.report_file\nimport sys\nprint('torch' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"


@pytest.mark.slow
def test_grade_report_is_found_by_the_app(tmp_path: Path):
    """`grade --report` (a real process, a real kernel) records where it wrote the report."""
    from test_hidden_checks import WRONG
    from test_hidden_checks import make_pack as make_secrets

    pack = make_secrets(tmp_path / "secrets")
    subs = tmp_path / "subs" / "ann" / "vault"
    subs.mkdir(parents=True)
    (subs / "open.py").write_text(WRONG)
    home = tmp_path / "home"
    env = {**os.environ, "PTFUND_TUTOR_HOME": str(home), "PTFUND_TUTOR_CACHE": str(home / "cache")}
    command = ["--pack", str(pack), "grade", str(tmp_path / "subs"), "--trust", "--report", str(tmp_path / "out")]
    r = subprocess.run(
        [sys.executable, "-m", "tutor", *command],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    [path] = recorded(home, ["secrets"])
    assert path == (tmp_path / "out" / "report.json").resolve()
    report = load(path)
    # The instructor's view: hidden checks by their ids, and the mistake tied to one.
    checks = {c.check: (c.passed, c.ran) for c in report.exercises[0].checks}
    assert checks["t-values"] == (0, 1) and checks["the-word"] == (0, 1) and checks["t-shape"] == (1, 1)
    assert any(m.message == "Say the word of the old cave." for m in report.mistakes)
