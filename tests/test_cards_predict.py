"""Predict cards: the key derived from a kernel run, with fakes and with a real kernel."""

from __future__ import annotations

import io
from datetime import datetime, timezone

import pytest

from tutor.engine.events import ErrorEvent, RunResult
from tutor.grading.predict import outcome_from_result, run_predict


def test_key_is_stdout_plus_last_value_stripped():
    o = outcome_from_result(RunResult(status="ok", output="torch.Size([2, 3])\n", result_text="tensor([1., 2.])"))
    assert o.ok and o.exception is None
    assert o.key == o.shown == "torch.Size([2, 3])\ntensor([1., 2.])"
    assert outcome_from_result(RunResult(status="ok", output="  hi  \n\n")).key == "hi"
    assert outcome_from_result(RunResult(status="ok", result_text="3")).key == "3"
    assert outcome_from_result(RunResult(status="ok")).key == ""


def test_key_of_an_exception_is_its_class_name():
    err = ErrorEvent(ename="RuntimeError", evalue="view size is not compatible", traceback=())
    o = outcome_from_result(RunResult(status="error", output="before\n", error=err))
    assert o.ok and o.key == "RuntimeError" and o.exception == "RuntimeError"
    assert o.shown == "before\nRuntimeError: view size is not compatible"


@pytest.mark.parametrize("status", ["timeout", "crashed", "interrupted"])
def test_unfinished_runs_give_no_key(status):
    o = outcome_from_result(
        RunResult(status=status, message="The kernel was restarted." if status == "crashed" else None)
    )
    assert not o.ok and o.key == "" and o.problem


async def test_run_predict_uses_the_session():
    class Session:
        async def execute(self, code, timeout=None):
            self.code, self.timeout = code, timeout
            return RunResult(status="ok", output="1\n", result_text="2")

    s = Session()
    o = await run_predict(s, "print(1)\n2", timeout=5)
    assert o.key == "1\n2" and s.code == "print(1)\n2" and s.timeout == 5


# ---------------------------------------------------------------- with a real kernel


def _engine_available() -> bool:
    try:
        from tutor.engine import KernelSession  # noqa: F401
    except Exception:
        return False
    return True


real_kernel = pytest.mark.skipif(not _engine_available(), reason="tutor.engine.KernelSession not available")


@real_kernel
@pytest.mark.slow
async def test_predict_key_with_real_torch():
    from tutor.engine import KernelSession

    session = KernelSession()
    try:
        await session.start()
        error = await run_predict(session, "import torch\nx = torch.zeros(2, 3)\nx.t().view(-1)")
        printed = await run_predict(session, "print(1)\n2 + 2")
    finally:
        await session.shutdown()
    assert error.key == "RuntimeError" and printed.key == "1\n4"


@real_kernel
@pytest.mark.slow
def test_quiz_runs_a_predict_card_in_a_real_kernel(tmp_path):
    from progress_pack import write_pack

    from tutor.commands.quiz import Quiz
    from tutor.packs.catalog import Catalog
    from tutor.progress import ProgressStore

    cat = Catalog.load([str(write_pack(tmp_path / "pack"))], builtin=False)
    refs = [r for r in cat.cards() if r.card.type == "predict"]
    out = io.StringIO()
    with ProgressStore(tmp_path / "p.sqlite3") as store:
        for ref in refs:  # new cards come only from lessons the learner opened or named
            store.add_quiz_lesson(ref.pack.id, ref.lesson.id, "named")
        q = Quiz(
            store,
            refs,
            stdin=io.StringIO("RuntimeError: view size\n"),
            stdout=out,
            trusted=lambda p: True,
            now=lambda: datetime(2024, 5, 1, tzinfo=timezone.utc),
        )
        try:
            q.run()
        finally:
            q.close()
    text = out.getvalue()
    assert "It prints:\n    RuntimeError: view size is not compatible" in text, text
    assert "Correct. It raises RuntimeError." in text


@real_kernel
@pytest.mark.slow
def test_quiz_predict_cards_do_not_see_each_others_names(tmp_path):
    """One kernel serves the session, but each card starts from what a fresh kernel has."""
    from tutor.commands.quiz import Quiz
    from tutor.packs.catalog import Catalog
    from tutor.progress import ProgressStore

    root = tmp_path / "pack"
    (root / "l").mkdir(parents=True)
    (root / "pack.yaml").write_text('id: leak\ntitle: Leak\nversion: "0.1"\nlessons: [l]\n')
    (root / "l" / "lesson.yaml").write_text(
        "id: l\ntitle: L\nintuition: x\ncards:\n"
        "  - {id: a, type: predict, prompt: p, code: 'leaked = 41\n\nleaked + 1', expected: '42'}\n"
        "  - {id: b, type: predict, prompt: p, code: 'leaked', expected: NameError}\n"
        "  - {id: c, type: predict, prompt: p, code: 'torch.tensor([1, 2]).sum()', expected: 'tensor(3)'}\n"
    )
    cat = Catalog.load([str(root)], builtin=False)
    assert not cat.problems, cat.problems
    out = io.StringIO()
    with ProgressStore(tmp_path / "p.sqlite3") as store:
        store.add_quiz_lesson("leak", "l", "named")  # new cards come only from named lessons
        q = Quiz(
            store,
            list(cat.cards()),
            stdin=io.StringIO("42\nNameError\ntensor(3)\n"),
            stdout=out,
            trusted=lambda p: True,
            now=lambda: datetime(2024, 5, 1, tzinfo=timezone.utc),
        )
        try:
            q.run()
        finally:
            q.close()
    text = out.getvalue()
    assert "It prints:\n    NameError: name 'leaked' is not defined" in text, text
    assert q.tally.right == 3, text
