"""A kernel that runs learner code is confined (docs/confinement.md): it writes only its
scratch directory, reads neither the pack nor other learners' files, nothing it starts
outlives it, it does not run as root, and doctor says which layers are active. Real
kernels, real processes, real files."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from engine_helpers import until

from tutor.engine import KernelSession
from tutor.engine.confine import LEARNER, OFF_ENV, TREE_ONLY, Confinement, _allowed, turned_off
from tutor.packs.scaffold import new_pack

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the confinement layers are Linux's")
# A GitHub-style runner or container may forbid namespaces or Landlock: what doctor says
# is tested there; what the layers refuse is tested where they are active.
REPO = Path(__file__).resolve().parent.parent


def cli(*args: str, home: Path, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    full = {**os.environ, "PTFUND_TUTOR_HOME": str(home), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "tutor", *args], capture_output=True, text=True, env=full, timeout=timeout
    )


def processes_with(token: str) -> list[int]:
    """The host's processes whose command line holds ``token``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"/proc/{entry}/stat") as f:
                zombie = f.read().split(") ", 1)[1][0] == "Z"
        except OSError:
            continue
        if token.encode() in cmdline and not zombie:
            found.append(int(entry))
    return found


def daemon_code(token: str, target: Path) -> str:
    """Learner code that leaves a double-forked ``setsid`` daemon, which sleeps, then writes."""
    sleeper = "import sys, time; time.sleep(60); open(sys.argv[1], 'w').write('still here')"
    return textwrap.dedent(
        f"""
        import os, subprocess, sys
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                subprocess.Popen([sys.executable, "-c", {sleeper!r}, {str(target)!r}, {token!r}],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            os._exit(0)
        """
    )


def gone(token: str, timeout: float = 30.0) -> bool:
    """Poll until no process holds ``token`` (SIGKILLed ones take a moment to go)."""
    deadline = time.monotonic() + timeout
    while processes_with(token):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, 9)
        except OSError:
            pass


# ---------------------------------------------------------------- policy (no kernel)


def test_a_policy_crosses_as_json_and_says_what_it_adds():
    policy = Confinement(read=("/data",), hide=("/srv/pack",), scratch_root="/tmp")
    assert Confinement.from_json(json.loads(json.dumps(policy.to_json()))) == policy
    assert policy.writing("/work").write == ("/work",)
    assert LEARNER.filesystem and LEARNER.drop_user and not TREE_ONLY.filesystem and not TREE_ONLY.drop_user


def test_a_hidden_path_is_cut_out_of_a_readable_root(tmp_path):
    for name in ("lib", "pack/lesson", "other"):
        (tmp_path / "root" / name).mkdir(parents=True)
    root = tmp_path / "root"
    rules = _allowed([str(root)], [str(root / "pack")])
    assert sorted(rules) == [str(root / "lib"), str(root / "other")]
    assert _allowed([str(root)], []) == [str(root)]
    assert _allowed([str(root / "pack" / "lesson")], [str(root / "pack")]) == []


def test_layers_can_be_turned_off_by_name(monkeypatch):
    monkeypatch.setenv(OFF_ENV, "Landlock, user, nonsense")
    assert turned_off() == {"landlock", "user"}
    monkeypatch.setenv(OFF_ENV, "all")
    assert turned_off() == {"namespaces", "landlock", "user", "rlimits"}


# ---------------------------------------------------------------- in real kernels


@pytest.fixture
async def learner_kernel():
    session = KernelSession()  # as check, grade and pack test get theirs: confined for learner code
    await session.start()
    yield session
    await session.shutdown()


async def run(session: KernelSession, code: str) -> str:
    result = await session.execute(code, timeout=60)
    assert result.error is None, result.error
    return result.output


def confinement_of(output: str) -> dict:
    return json.loads(output.strip().splitlines()[-1])


@pytest.mark.slow
@linux
async def test_learner_code_writes_only_its_scratch_directory(learner_kernel, tmp_path):
    report = confinement_of(await run(learner_kernel, "import os; print(os.environ['PTFUND_TUTOR_CONFINEMENT'])"))
    if not report["landlock"].startswith("ABI") and OFF_ENV not in report["landlock"]:
        pytest.skip(f"Landlock is not active here: {report['landlock']}")
    pack = new_pack(tmp_path / "pack")
    data = tmp_path / "data"
    data.mkdir()
    (data / "progress.sqlite").write_text("saved")
    targets = [pack / "evil.py", data / "progress.sqlite", data / "new.txt", REPO / "tutor" / "evil.py"]
    code = textwrap.dedent(
        f"""
        import os
        refused = []
        for path in {[str(t) for t in targets]!r}:
            try:
                with open(path, "a") as f:
                    f.write("forged")
            except (PermissionError, FileNotFoundError):  # not writable, or not in its root at all
                refused.append(path)
        with open("mine.txt", "w") as f:  # the working directory is the scratch directory
            f.write("ok")
        print(refused == {[str(t) for t in targets]!r}, os.getcwd() == os.environ["TMPDIR"], open("mine.txt").read())
        """
    )
    assert (await run(learner_kernel, code)).split() == ["True", "True", "ok"]
    assert (data / "progress.sqlite").read_text() == "saved"
    assert (
        not (pack / "evil.py").exists()
        and not (data / "new.txt").exists()
        and not (REPO / "tutor" / "evil.py").exists()
    )
    scratch = Path(report["scratch"])
    assert (scratch / "mine.txt").exists()
    await learner_kernel.shutdown()
    await until(lambda: not scratch.exists(), timeout=30, what="the scratch directory removed")


@pytest.mark.slow
@linux
async def test_learner_code_cannot_read_the_pack_or_other_learners(learner_kernel, tmp_path):
    report = confinement_of(await run(learner_kernel, "import os; print(os.environ['PTFUND_TUTOR_CONFINEMENT'])"))
    if not report["landlock"].startswith("ABI") and OFF_ENV not in report["landlock"]:
        pytest.skip(f"Landlock is not active here: {report['landlock']}")
    pack = new_pack(tmp_path / "pack")
    classmate = tmp_path / "class" / "bob" / "answer.py"
    classmate.parent.mkdir(parents=True)
    classmate.write_text("t = 'bob solved it'\n")
    secrets = [pack / "first-steps" / "lesson.yaml", pack / "first-steps" / "solution_zeros.py", classmate]
    builtin = REPO / "lessons"  # the built-in pack, beside the tutor's code
    secrets += sorted(builtin.glob("*/lesson.yaml"))[:1]
    code = textwrap.dedent(
        f"""
        import os, torch
        refused = []
        for path in {[str(s) for s in secrets]!r}:
            try:
                open(path).read()
            except (PermissionError, FileNotFoundError):
                refused.append(path)
        listing = []
        for folder in {[str(pack), str(classmate.parent)]!r}:
            try:
                listing += os.listdir(folder)
            except (PermissionError, FileNotFoundError):
                pass
        # What a kernel needs is still there: torch, the system's files, /dev/null.
        print(len(refused), listing, torch.ones(2).sum().item(), len(open("/etc/passwd").read()) > 0,
              open(os.devnull, "w").write("x"))
        """
    )
    out = (await run(learner_kernel, code)).strip().split(maxsplit=1)
    assert out[0] == str(len(secrets)) and out[1] == "[] 2.0 True 1", out


@pytest.mark.slow
@linux
async def test_learner_code_reaches_no_socket_of_the_users(learner_kernel):
    """Landlock does not govern connect(): a Unix socket the kernel's user may use by its
    permissions (a tmux server's, the session bus, the warm server's) must not exist in the
    kernel's root, and no TCP service on this machine takes its connection."""
    report = confinement_of(await run(learner_kernel, "import os; print(os.environ['PTFUND_TUTOR_CONFINEMENT'])"))
    if "a root of its own" not in report["namespaces"]:
        pytest.skip(f"no root of its own here: {report['namespaces']}")
    folder = Path(tempfile.mkdtemp(prefix="ptfund-socket-", dir="/tmp"))
    os.chmod(folder, 0o777)  # reachable by permissions for whatever user the kernel runs as
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(str(folder / "server.sock"))
    os.chmod(folder / "server.sock", 0o777)
    unix.listen()
    tcp = socket.create_server(("127.0.0.1", 0))
    port = tcp.getsockname()[1]
    try:
        code = textwrap.dedent(
            f"""
            import socket
            said = []
            for family, address in ((socket.AF_UNIX, {str(folder / "server.sock")!r}), (socket.AF_INET, ("127.0.0.1", {port}))):
                s = socket.socket(family)
                try:
                    s.connect(address)
                    said.append("connected")
                except OSError as exc:
                    said.append(type(exc).__name__)
            print(*said)
            """
        )
        assert (await run(learner_kernel, code)).split() == ["FileNotFoundError", "PermissionError"]
        unix.setblocking(False)
        tcp.setblocking(False)
        for server in (unix, tcp):
            with pytest.raises(BlockingIOError):
                server.accept()  # nobody came
        # Its own Unix sockets, in its scratch directory, still work (DataLoader workers share tensors so).
        code = "import socket; a = socket.socket(socket.AF_UNIX); a.bind('own.sock'); a.listen(); b = socket.socket(socket.AF_UNIX); b.connect('own.sock'); print('ok')"
        assert (await run(learner_kernel, code)).split() == ["ok"]
        # Its /dev/shm is its own: a file written there is not the host's, so it cannot outlive the kernel.
        token = f"ptfund-left-{uuid.uuid4().hex}"
        assert (await run(learner_kernel, f"open('/dev/shm/{token}', 'w').write('x'); print('written')")).split() == [
            "written"
        ]
        assert token not in os.listdir("/dev/shm")
    finally:
        unix.close()
        tcp.close()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.slow
@linux
@pytest.mark.parametrize("policy", [LEARNER, TREE_ONLY], ids=["learner", "live pane"])
async def test_a_setsid_daemon_ends_with_its_kernel(policy, tmp_path):
    token = f"ptfund-daemon-{uuid.uuid4().hex}"
    target = tmp_path / "written-later.txt"
    session = KernelSession(confinement=policy)
    try:
        await session.start()
        report = confinement_of(await run(session, "import os; print(os.environ['PTFUND_TUTOR_CONFINEMENT'])"))
        if report["namespaces"].startswith("none") and OFF_ENV not in report["namespaces"]:
            pytest.skip(f"no PID namespace here: {report['namespaces']}")
        await run(session, daemon_code(token, target))
        await until(lambda: processes_with(token), timeout=60, what="the daemon started")
    finally:
        await session.shutdown()
    try:
        await until(lambda: not processes_with(token), timeout=30, what="the daemon gone with its kernel")
    finally:
        kill_all(processes_with(token))  # on a platform that let it live, do not leave it running
    assert not target.exists()


@pytest.mark.slow
@linux
@pytest.mark.parametrize("launcher", ["fork", "spawn"])
async def test_a_torch_cache_named_by_the_tutors_environment_is_the_kernels_own(launcher, monkeypatch, tmp_path):
    """torch writes the inductor cache it chose into its process's environment; a kernel
    started from there (or from a shell that named one) could not write that directory, and
    torch._dynamo's import (every meta-device op) failed on it. The kernel's is in its scratch."""
    monkeypatch.setenv("PTFUND_TUTOR_LAUNCHER", launcher)
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "torchinductor_of_the_tutor"))
    session = KernelSession()
    try:
        await session.start()
        out = await run(
            session,
            "import os, torch\n(torch.ones(2, device='meta') * 2).sum()\n"
            "from torch._inductor.runtime.cache_dir_utils import cache_dir\nprint(cache_dir(), os.getcwd())",
        )
        cache, scratch = out.split()
        assert cache.startswith(scratch + os.sep), out
    finally:
        await session.shutdown()


@pytest.mark.slow
@linux
def test_a_daemon_from_a_packs_setup_ends_with_pack_test(tmp_path):
    token = f"ptfund-setup-daemon-{uuid.uuid4().hex}"
    pack = new_pack(tmp_path / "pack")
    lesson = pack / "first-steps" / "lesson.yaml"
    setup = textwrap.indent(daemon_code(token, tmp_path / "written-later.txt").strip(), " " * 6)
    text = lesson.read_text().replace(
        "    solution: solution_zeros.py\n", f"    setup: |\n{setup}\n    solution: solution_zeros.py\n"
    )
    lesson.write_text(text)
    try:
        done = cli("pack", "test", str(pack), "--trust", home=tmp_path / "home")
        assert done.returncode in (0, 1), done.stderr
        assert gone(token)  # every kernel of the run ended, and its processes with it
    finally:
        kill_all(processes_with(token))


@pytest.mark.slow
@linux
@pytest.mark.skipif(os.geteuid() != 0, reason="the user is dropped when started as root")
async def test_started_as_root_learner_code_does_not_run_as_root(learner_kernel):
    out = await run(learner_kernel, "import os; print(os.getuid(), os.geteuid(), os.getgid(), os.getgroups())")
    uid, euid, gid, groups = out.split(maxsplit=3)
    assert uid != "0" and euid != "0" and gid != "0" and groups.strip() == "[]"


@pytest.mark.slow
def test_check_keeps_the_learners_hands_off_the_pack_and_the_data_dir(tmp_path):
    """Through ``check``, as a learner runs it: a forged file and a read solution both fail."""
    pack = new_pack(tmp_path / "pack")
    home = tmp_path / "home"
    solution = pack / "first-steps" / "solution_zeros.py"
    solution.write_text(solution.read_text() + "# the instructor's secret 7f3a\n")
    code = textwrap.dedent(
        f"""
        import torch
        for path in [{str(home / "forged.txt")!r}, {str(pack / "forged.txt")!r}]:
            try:
                open(path, "w").write("forged")
            except OSError:
                pass
        try:
            print(open({str(solution)!r}).read())
        except OSError:
            pass
        t = torch.zeros(2, 3, dtype=torch.float64, device=DEVICE)
        """
    )
    answer = tmp_path / "answer.py"
    answer.write_text(code)
    done = cli("--pack", str(pack), "check", "first-steps/zeros", "--file", str(answer), "--trust", home=home)
    assert done.returncode in (0, 1), done.stderr
    assert "7f3a" not in done.stdout + done.stderr
    assert not (home / "forged.txt").exists() and not (pack / "forged.txt").exists()


@pytest.mark.slow
def test_doctor_lists_each_layer_and_what_a_missing_one_leaves_unprotected(tmp_path):
    done = cli("doctor", home=tmp_path / "home")
    assert done.returncode == 0, done.stderr
    rows = done.stdout
    for layer in ("confinement:", "namespaces:", "landlock:", "user:", "rlimits:"):
        assert layer in rows, rows
    if "namespaces:   PID and mount" in rows and "landlock:     ABI" in rows and "user:         nobody" in rows:
        assert "not protected" not in rows, rows
    off = cli("doctor", home=tmp_path / "home", env={OFF_ENV: "all"})
    assert off.returncode == 0, off.stderr
    assert f"namespaces:   none: turned off by {OFF_ENV}" in off.stdout
    assert "not protected:  a process the kernel starts that leaves its process group (setsid)" in off.stdout
    assert "not protected:  learner code can read and write every file" in off.stdout
    if os.geteuid() == 0:
        assert "not protected:  learner code runs as root" in off.stdout
