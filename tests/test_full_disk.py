"""A full disk: the commands that only look still work, writes fail in one sentence, the
app quits cleanly, and nothing saved is lost.

The disk is a real 1 MB tmpfs filled to the last byte when the tests may mount one (root);
elsewhere a file-size limit of 0 (RLIMIT_FSIZE) on the command's process stands in for it:
no file may grow, which is what a full disk refuses. The app test needs the real thing.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pytest
from test_app_support import make_app, make_pack, open_first_lesson, wait_for, wait_ready

from tutor.packs.catalog import Catalog
from tutor.progress import ProgressStore
from tutor.progress.database import FILENAME

REPO = Path(__file__).resolve().parent.parent
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)

pytestmark = pytest.mark.slow  # mounts a filesystem and runs the CLI as processes


@dataclass
class Disk:
    data: Path  # the data dir, on the disk
    mounted: bool  # a real tmpfs; False: a file-size limit on each command stands in

    def fill(self) -> None:
        """Write until the filesystem refuses even one byte (nothing to do under the limit)."""
        if not self.mounted:
            return
        fd = os.open(self.data.parent / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            for size in (1 << 16, 1 << 12, 1 << 9, 1):
                with contextlib.suppress(OSError):
                    while os.write(fd, b"\0" * size):
                        pass
        finally:
            os.close(fd)
        assert shutil.disk_usage(self.data).free == 0

    def cli(self, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
        def no_growing_files() -> None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

        return subprocess.run(
            [sys.executable, "-m", "tutor", "--data-dir", str(self.data), *args],
            input=stdin,
            capture_output=True,
            text=True,
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            timeout=120,
            preexec_fn=None if self.mounted else no_growing_files,
        )


def _mount_tmpfs(where: Path) -> bool:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)], capture_output=True)
    return r.returncode == 0


@pytest.fixture
def disk(tmp_path) -> Iterator[Disk]:
    where = tmp_path / "disk"
    where.mkdir()
    mounted = _mount_tmpfs(where)
    data = where / "data"
    data.mkdir()
    try:
        yield Disk(data, mounted)
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(where)], check=False)


def _first_exercise() -> tuple[str, str]:
    pack = Catalog.load([]).packs[0]
    lesson = next(les for les in pack.lessons if les.exercises)
    return pack.id, f"{lesson.id}/{lesson.exercises[0].id}"


def _seed(data: Path) -> tuple[str, str]:
    """One passed attempt and one review, closed cleanly (no write-ahead log left)."""
    pack, item = _first_exercise()
    with ProgressStore(data / FILENAME) as s:
        s.record_attempt(pack, item, passed=True, code="x = 1\n", content_hash="h", at=T0)
        s.review(pack, "somewhere/card", True, T0, content_hash="h")
    return pack, item


def _one_sentence(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) <= 1, stderr


def test_progress_list_and_export_read_a_full_disk(disk, tmp_path):
    pack, item = _seed(disk.data)
    disk.fill()

    r = disk.cli("progress", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["totals"]["attempts"] == 1

    r = disk.cli("progress")
    assert r.returncode == 0, r.stderr
    assert "1 exercise attempt" in r.stdout

    # `list` used to show every exercise as new when it could not read the file.
    r = disk.cli("list", "--json")
    assert r.returncode == 0, r.stderr
    statuses = {
        ex["id"]: ex["status"] for p in json.loads(r.stdout)["packs"] for les in p["lessons"] for ex in les["exercises"]
    }
    assert statuses[item] == "passed"

    # To another disk; under the file-size limit no disk takes a file, so to stdout.
    target = str(tmp_path / "export.json") if disk.mounted else "-"
    r = disk.cli("progress", "export", target)
    assert r.returncode == 0, r.stderr
    exported = json.loads(Path(target).read_text() if disk.mounted else r.stdout)
    assert [(a["pack"], a["item"]) for a in exported["attempts"]] == [(pack, item)]
    assert len(exported["reviews"]) == 1
    _one_sentence(r.stderr)


def test_a_write_on_a_full_disk_is_one_sentence_and_loses_nothing(disk, tmp_path):
    _seed(disk.data)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with ProgressStore(elsewhere / FILENAME) as s:
        s.record_attempt("other", "l/e", passed=False, code="y = 2\n", content_hash="h", at=T0)
        export = json.dumps(s.export())
    disk.fill()

    r = disk.cli("progress", "import", "-", stdin=export)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.startswith("ptfund-tutor: "), r.stderr
    _one_sentence(r.stderr)
    assert "disk is full" in r.stderr or not disk.mounted, r.stderr

    r = disk.cli("progress", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["totals"]["attempts"] == 1


async def test_the_app_quits_cleanly_after_saves_failed_on_a_full_disk(disk, tmp_path, capfd):
    if not disk.mounted:
        pytest.skip("needs a real full filesystem: mounting a tmpfs takes root")
    app = make_app(make_pack(tmp_path / "pack"), disk.data, kernels=False)
    async with app.run_test() as pilot:
        await wait_ready(pilot)
        assert app.store is not None and app.load_error is None
        disk.fill()
        screen = await open_first_lesson(pilot)  # its position and quiz lesson are not saved
        screen.query_one("#editor").insert("x = 1\n")
        await pilot.press("ctrl+q")  # the draft is not saved either
    assert app.return_code == 0
    told = [str(n.message) for n in app._notifications]
    assert any(m.startswith("Could not save your code:") for m in told), told
    for message in told:
        assert "disk is full" in message and "Traceback" not in message, told
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Logging error" not in err, err


async def test_the_app_opens_on_a_full_disk_and_shows_what_is_saved(disk, tmp_path):
    if not disk.mounted:
        pytest.skip("needs a real full filesystem: mounting a tmpfs takes root")
    app = make_app(make_pack(tmp_path / "pack"), disk.data, kernels=False)
    with ProgressStore(disk.data / FILENAME) as s:
        s.record_attempt("apptest", "basics/zeros", passed=True, code="t = 1\n", content_hash="h", at=T0)
    disk.fill()
    async with app.run_test() as pilot:
        await wait_ready(pilot)
        assert app.load_error is None and app.store is not None
        assert app.store.exercise_stats()[("apptest", "basics/zeros")].passed
        notice = app.store.notice or ""
        assert "disk is full" in notice and "nothing new can be saved" in notice, notice
        await wait_for(pilot, lambda: any(notice in str(n.message) for n in app._notifications), 10, "the notice")
        await wait_for(pilot, lambda: app.screen.query_one("#lessons").option_count >= 2, 10, "the lessons")
        await pilot.press("ctrl+q")
    assert app.return_code == 0
