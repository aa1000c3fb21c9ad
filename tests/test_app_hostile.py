"""The app against odd editors and oversized code: the draft survives and a sentence says why."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

pytest.importorskip("textual")

from test_app_support import make_app, make_pack, open_first_lesson, wait_for

from tutor.grading.code_size import MAX_CODE_BYTES


@pytest.fixture
def pack(tmp_path: Path) -> Path:
    return make_pack(tmp_path / "pack")


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


def notified(app, needle: str) -> bool:
    return any(needle in str(n.message) for n in app._notifications)


EDITORS = {
    "latin-1": ('printf \'t = "caf\\351"\\n\' > "$1"', "was saved in an encoding other than UTF-8 (line 1)"),
    "deleted": ('rm "$1"', "was deleted or renamed in the editor"),
    "renamed": ('mv "$1" "$1.bak"', "was deleted or renamed in the editor"),
    "huge": (f'head -c {5 * MAX_CODE_BYTES} /dev/zero | tr "\\0" "x" > "$1"', "-byte limit for a solution"),
}


@pytest.mark.parametrize("kind", sorted(EDITORS))
async def test_external_editor_leaving_an_unusable_file_keeps_the_draft(pack, data, tmp_path, monkeypatch, kind):
    script, message = EDITORS[kind]
    editor_script = tmp_path / "odd-editor.sh"
    editor_script.write_text(f"#!/bin/sh\n{script}\n")
    editor_script.chmod(0o755)
    monkeypatch.setenv("VISUAL", str(editor_script))
    app = make_app(pack, data, kernels=False)
    monkeypatch.setattr(app, "suspend", contextlib.nullcontext)  # no terminal to hand over in a test
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_first_lesson(pilot)
        before = screen.query_one("#editor").text
        await pilot.press("ctrl+o")
        await wait_for(pilot, lambda: notified(app, message), 10, "the notice")
        assert notified(app, "your code is as it was before")
        assert screen.query_one("#editor").text == before
        assert app.is_running


async def test_oversized_code_is_neither_run_nor_checked(pack, data):
    app = make_app(pack, data, kernels=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_first_lesson(pilot)
        screen.query_one("#editor").load_text("x = 1\n" * (MAX_CODE_BYTES // 6 + 1))
        await pilot.press("ctrl+t")
        verdict = screen.query_one("#checks #verdict")
        await wait_for(
            pilot, lambda: "limit for a solution: it was not checked" in str(verdict.render()), 10, "verdict"
        )
        await pilot.press("ctrl+r")
        log = screen.query_one("#output")
        await wait_for(pilot, lambda: any("it was not run" in line for line in log.lines), 10, "the note")


async def test_oversized_paste_is_refused(pack, data):
    from textual import events

    app = make_app(pack, data, kernels=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_first_lesson(pilot)
        editor = screen.query_one("#editor")
        before = editor.text
        editor.post_message(events.Paste("y = 2\n" * (MAX_CODE_BYTES // 6 + 1)))
        await wait_for(pilot, lambda: notified(app, "Not pasted"), 10, "the notice")
        assert editor.text == before
        editor.post_message(events.Paste("y = 2\n"))
        await wait_for(pilot, lambda: "y = 2" in editor.text, 10, "a small paste")


async def test_oversized_saved_draft_opens_the_starter(pack, data):
    from tutor.progress.store import ProgressStore

    store = ProgressStore.open(data)
    store.save_draft("apptest", "basics/zeros", "z = 3\n" * (MAX_CODE_BYTES // 6 + 1))
    store.close()
    app = make_app(pack, data, kernels=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_first_lesson(pilot)
        await wait_for(pilot, lambda: notified(app, "the starter is shown instead"), 10, "the notice")
        assert "z = 3" not in screen.query_one("#editor").text


@pytest.mark.slow
async def test_header_tells_when_the_kernel_is_killed_from_outside(pack, data):
    import os
    import signal

    app = make_app(pack, data)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_first_lesson(pilot)
        await wait_for(pilot, lambda: app.kernel_status.state == "ready", 120, "the kernel")
        os.kill(app.kernels._live.report["pid"], signal.SIGKILL)
        await wait_for(pilot, lambda: app.kernel_status.state == "dead", 30, "the header to notice")
        assert app.kernel_status.label.startswith("kernel stopped")
        assert "stopped while nothing was running" in app.kernel_status.message
        # the next run brings a new kernel and says so
        screen.query_one("#editor").load_text("print(6 * 7)\n")
        await pilot.press("ctrl+r")
        log = screen.query_one("#output")
        await wait_for(pilot, lambda: any("42" in line for line in log.lines), 120, "the run in a new kernel")
        assert app.kernel_status.state in ("ready", "restarted")
