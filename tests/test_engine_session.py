"""A real kernel, shared by every test here: runs, streaming, errors the kernel survives."""

from __future__ import annotations

import ast
import asyncio
import json
import pathlib

import pytest
import pytest_asyncio
from engine_helpers import Recorder, until

from tutor.engine import KernelSession
from tutor.engine.events import DisplayEvent, ErrorEvent, OmittedEvent, StreamEvent

# Every test here starts or attaches to a kernel.
pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def kernel():
    session = KernelSession()
    states = []
    session.on_state = states.append
    await session.start()
    session.test_states = states
    yield session
    await session.shutdown()


async def test_start_reports_device_and_state(kernel):
    assert kernel.state == "ready"
    info = kernel.device_info
    assert info.kind in ("cpu", "cuda", "mps") and info.torch_version and info.python_version
    assert [e.state for e in kernel.test_states[:2]] == ["starting", "ready"]
    r = await kernel.execute(
        "DEVICE, torch_in_user_ns = DEVICE, 'torch' in dir()\n"
        "import sys; (str(DEVICE), 'ptfund_checks' in sys.modules, torch_in_user_ns)"
    )
    assert r.result_text == repr((info.kind, True, False))
    assert kernel.checks_error is None


async def test_start_is_idempotent(kernel):
    pid = kernel.report["pid"]
    await kernel.start()
    await asyncio.gather(kernel.start(), kernel.start())
    assert kernel.report["pid"] == pid


async def test_check_library_is_importable(kernel):
    r = await kernel.execute("import ptfund_checks\nptfund_checks.__name__")
    assert r.ok, r.error
    assert r.result_text == "'ptfund_checks'"


async def test_round_trip_and_result(kernel):
    r = await kernel.execute("1 + 1")
    assert r.status == "ok" and r.result_text == "2" and r.message is None
    assert r.displays == [DisplayEvent({"text/plain": "2"}, is_result=True)]
    assert r.execution_count is not None and r.elapsed > 0  # measured; how fast is benchmarks/engine.py's


async def test_stdout_and_stderr_in_order(kernel):
    rec = Recorder()
    r = await kernel.execute(
        "import sys\nprint('out')\nsys.stdout.flush()\nprint('err', file=sys.stderr)", on_output=rec
    )
    assert r.output == "out\nerr\n"
    streams = [(e.name, e.text) for e in rec.events if isinstance(e, StreamEvent)]
    assert streams == [("stdout", "out\n"), ("stderr", "err\n")]


async def test_output_is_delivered_while_the_code_still_runs(kernel):
    """The kernel waits for a file that only the callback creates, on seeing the first line:
    if events arrived only at the end, the kernel would wait out its deadline. The file is
    in the kernel's working directory: a confined kernel sees no other of the host's."""
    where = await kernel.execute("import os; os.getcwd()")
    flag = pathlib.Path(ast.literal_eval(where.result_text)) / "seen"

    def on_output(event):
        if isinstance(event, StreamEvent) and "first" in event.text:
            flag.write_text("yes")

    code = (
        f"import os, sys, time\nprint('first'); sys.stdout.flush()\n"
        f"deadline = time.time() + 20\n"
        f"while not os.path.exists({str(flag)!r}) and time.time() < deadline: time.sleep(0.01)\n"
        f"print('second' if os.path.exists({str(flag)!r}) else 'never streamed')"
    )
    r = await kernel.execute(code, on_output=on_output)
    assert r.output == "first\nsecond\n"


async def test_custom_mime_bundles_are_kept_intact(kernel):
    payload = {"verdict": "pass", "checks": [{"ok": True, "message": "shape (2, 3)"}]}
    rec = Recorder()
    code = (
        "from IPython.display import display\n"
        f"display({{'application/vnd.ptfund+json': {payload!r}, 'text/plain': 'verdict'}}, raw=True)"
    )
    r = await kernel.execute(code, on_output=rec)
    assert r.ok
    assert r.displays[0].data["application/vnd.ptfund+json"] == json.loads(json.dumps(payload))
    assert not r.displays[0].is_result
    assert any(isinstance(e, DisplayEvent) for e in rec.events)


async def test_error_has_plain_traceback(kernel):
    rec = Recorder()
    r = await kernel.execute("def f():\n    raise ValueError('bad value')\nf()", on_output=rec)
    assert r.status == "error" and r.message is None
    assert r.error.ename == "ValueError" and r.error.evalue == "bad value"
    text = "\n".join(r.error.traceback)
    assert "\x1b" not in text and "raise ValueError('bad value')" in text
    assert [e for e in rec.events if isinstance(e, ErrorEvent)] == [r.error]
    assert (await kernel.execute("'still here'")).result_text == "'still here'"


async def test_silent_run_keeps_no_history(kernel):
    before = (await kernel.execute("1")).execution_count
    r = await kernel.execute("hidden = 41", silent=True)
    assert r.ok
    after = await kernel.execute("hidden + 1")
    assert after.result_text == "42" and after.execution_count == before + 1


async def test_complete_and_inspect(kernel):
    await kernel.execute("import os\nmy_tensor_name = 1")
    reply = await kernel.complete_reply("os.pa")
    # Matches replace code[cursor_start:cursor_end], as the protocol says.
    assert "os.path" in ["os.pa"[: reply["cursor_start"]] + m for m in reply["matches"]]
    assert set(await kernel.complete("os.pa")) == set(reply["matches"])
    assert "my_tensor_name" in await kernel.complete("x = my_tens", 11)
    reply = await kernel.complete_reply("x = my_tens")
    assert reply["cursor_start"] == 4 and reply["cursor_end"] == 11
    doc = await kernel.inspect("len(", 3)
    assert doc and "Return the number of items" in doc and "\x1b" not in doc
    assert await kernel.inspect("no_such_name_here", 5) is None


# ---------------------------------------------------------------- faults the kernel survives


async def test_sys_exit_is_an_error_with_a_sentence(kernel):
    await kernel.execute("kept = 7")
    for code in ("import sys; sys.exit()", "import sys; sys.exit(3)"):
        r = await kernel.execute(code)
        assert r.status == "error" and r.error.ename == "SystemExit"
        assert "sys.exit()" in r.message and "variables are kept" in r.message
    assert (await kernel.execute("kept")).result_text == "7"


async def test_exit_and_quit_do_not_stop_the_kernel(kernel):
    pid = kernel.report["pid"]
    await kernel.execute("kept = 8")
    for code in ("exit()", "quit()"):
        r = await kernel.execute(code)
        assert r.ok and "exit() and quit() do nothing here" in r.message
    r = await kernel.execute("kept")
    assert r.result_text == "8" and r.message is None and kernel.report["pid"] == pid


@pytest.mark.parametrize(
    "code, ename",
    [
        ("import torch\ntorch.empty(10**13)", "RuntimeError"),
        ("bytearray(10**15)", "MemoryError"),
    ],
)
async def test_huge_allocations_fail_cleanly(kernel, code, ename):
    await kernel.execute("kept = 9")
    r = await kernel.execute(code)
    assert r.status == "error" and r.error.ename == ename
    assert "memory" in r.message and "variables are kept" in r.message
    assert (await kernel.execute("kept")).result_text == "9"


async def test_unbounded_recursion_is_reported_briefly(kernel):
    r = await kernel.execute("def f(n):\n    return f(n + 1)\nf(0)")
    assert r.status == "error" and r.error.ename == "RecursionError"
    assert "recursed too deeply" in r.message
    # The repeated frame is said once with a count: IPython's rich traceback rendered all
    # ~3000 frames (10+ s); plain tracebacks collapse them.
    assert any("more times" in line for line in r.error.traceback)
    assert sum(line.count("return f(n + 1)") for line in r.error.traceback) <= 5
    assert len(r.error.traceback) < 50
    assert (await kernel.execute("1")).ok


async def test_input_without_a_callback_says_it_is_not_supported(kernel):
    r = await kernel.execute("name = input('Your name? ')")
    assert r.status == "error"
    assert r.message == "input() is not supported here; put the value directly in your code instead."
    assert (await kernel.execute("2")).result_text == "2"


async def test_input_with_a_callback(kernel):
    prompts = []

    async def answer(prompt):
        prompts.append(prompt)
        return "Ada" if len(prompts) == 1 else "36"

    r = await kernel.execute(
        "name = input('Your name? ')\nage = int(input('Age? '))\nprint(name, age + 1)", stdin=answer
    )
    assert r.ok, r.error
    assert prompts == ["Your name? ", "Age? "]
    assert r.output == "Your name? Ada\nAge? 36\nAda 37\n"


async def test_waiting_for_input_does_not_count_against_the_time_limit(kernel):
    async def slow_answer(prompt):
        await asyncio.sleep(1.0)  # a learner typing; longer than the run's limit
        return "ok"

    r = await kernel.execute("x = input('? ')\nx", stdin=slow_answer, timeout=0.5)
    assert r.ok and r.result_text == "'ok'"


async def test_input_declined_interrupts_the_run(kernel):
    r = await kernel.execute("x = input('? ')", stdin=lambda prompt: None)
    assert r.status == "interrupted" and "interrupted" in r.message
    assert (await kernel.execute("3")).result_text == "3"


async def test_a_million_lines_are_capped(kernel):
    rec = Recorder()
    r = await kernel.execute("for i in range(1_000_000):\n    print(i)", on_output=rec, timeout=120)
    assert r.ok
    lines = r.output.splitlines()
    assert lines[:3] == ["0", "1", "2"] and lines[-1] == "999999"
    assert r.omitted_lines > 990_000
    assert f"… {r.omitted_lines} lines omitted …" in r.output
    assert len(r.output) < 100_000
    assert "1000000 lines" in r.message
    omitted = [e for e in rec.events if isinstance(e, OmittedEvent)]
    assert omitted == [OmittedEvent(r.omitted_lines)]
    streamed = sum(len(e.text) for e in rec.events if isinstance(e, StreamEvent))
    assert streamed < 100_000
    # The stream after the marker is the tail, ending with the last line.
    last = [e for e in rec.events if isinstance(e, StreamEvent)][-1]
    assert last.text.endswith("999999\n")


async def test_printing_a_huge_tensor(kernel):
    r = await kernel.execute("import torch\nbig = torch.arange(10**8)\nprint(big)\nbig", timeout=120)
    assert r.ok
    assert "..." in r.output and len(r.output) < 1000
    assert "99999999" in r.result_text and len(r.result_text) < 1000
    await kernel.execute("del big")


async def test_huge_text_value_is_cut(kernel):
    r = await kernel.execute("'x' * 5_000_000")
    assert r.ok and len(r.result_text) < 300_000 and "characters omitted" in r.result_text


# ---------------------------------------------------------------- interrupt and timeout


async def _start_run(kernel, code, **kwargs):
    rec = Recorder()
    task = asyncio.ensure_future(kernel.execute(code, on_output=rec, **kwargs))
    await until(lambda: "started" in rec.text() or task.done(), 60, "the run to start")
    return task


async def test_interrupt_stops_an_infinite_loop_and_keeps_variables(kernel):
    # How fast (the "within 1 s"): benchmarks/interrupt.py, never a timed test.
    await kernel.execute("kept = 10")
    task = await _start_run(kernel, "print('started', flush=True)\nwhile True:\n    pass")
    await kernel.interrupt()
    r = await asyncio.wait_for(task, 60)  # a hang guard
    assert r.status == "interrupted" and r.error.ename == "KeyboardInterrupt"
    assert r.message == "Your code was interrupted; the kernel is still running and your variables are kept."
    assert (await kernel.execute("kept")).result_text == "10"


async def test_interrupt_when_idle_is_harmless(kernel):
    await kernel.interrupt()
    assert (await kernel.execute("5")).result_text == "5"


async def test_timeout_interrupts(kernel):
    await kernel.execute("kept = 11")
    r = await kernel.execute("import time\nwhile True:\n    time.sleep(0.01)", timeout=0.5)
    assert r.status == "timeout"
    assert r.message == (
        "Your code ran past the 0.5 s time limit and was interrupted; "
        "the kernel is still running and your variables are kept."
    )
    assert (await kernel.execute("kept")).result_text == "11"
