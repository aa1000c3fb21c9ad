"""An author's pytest file, run against the learner's code imported as a module.

Runs where the learner's code lives (the learner's kernel; this process with one kernel):
the tests call the learner's functions and classes directly, as an outside course's test
run does. The file arrives after the learner's code has run, is written to a fresh
directory of the kernel's scratch space, and pytest runs it in this process with the
learner's namespace registered under the exercise's module name (``micrograd.engine``),
no plugin but hypothesis's, no configuration file found on disk, no cache and no
hypothesis database written. What comes back is data: one record per test (its name,
its outcome, pytest's own assertion message, the line).

pytest and hypothesis are imported only here and only when a pytest check runs, so the
rest of the library keeps to the standard library, torch and numpy.
"""

import contextlib
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import types

from .namespaces import INTERRUPTS, BoundedOutput, captured

MAX_TESTS = 200  # records sent back; more are summed up in one
MAX_MESSAGE = 1500  # characters of one test's message
MAX_LINES = 20
# No installed plugin, no options or plugins from the environment, plain text.
_ENVIRON = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTEST_ADDOPTS": "", "PYTEST_PLUGINS": "", "PY_COLORS": "0"}
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class TestTimedOut(BaseException):
    """A test ran past its CPU time: a BaseException, so neither the test's own ``except
    Exception`` nor hypothesis (which would shrink it) treats it as the test's failure."""


def run_file(
    source: str, module, module_name: str, *, seed: int = 0, timeout: float = 10.0, filename: str = ""
) -> dict:
    """``{"tests": [{"name", "outcome", "message", "line"}, ...], "problem": str | None}``.

    ``problem`` is a sentence when no test could run at all (pytest missing, a file that
    does not import). ``module`` is the learner's namespace as a module (namespaces.new_namespace)."""
    try:
        import pytest
    except ImportError:
        return {"tests": [], "problem": "pytest is not installed in the kernel's Python, so the tests could not run"}
    if not isinstance(module, types.ModuleType):
        return {"tests": [], "problem": f"the code was not run as the module {module_name}"}
    filename = filename or "test_" + module_name.rsplit(".", 1)[-1] + ".py"
    try:
        # TMPDIR names the confined kernel's scratch folder (tempfile may have cached another
        # one before the kernel was forked).
        folder = tempfile.mkdtemp(prefix="ptfund-tests-", dir=os.environ.get("TMPDIR") or None)
    except OSError as exc:
        return {"tests": [], "problem": f"the test file could not be written to the kernel's scratch folder ({exc})"}
    collector = _Collector(folder, timeout)
    restore = _as_module(module, module_name)
    profile = _hypothesis_profile()
    environ = {key: os.environ.get(key) for key in _ENVIRON}
    os.environ.update(_ENVIRON)
    try:
        path = os.path.join(folder, filename)
        with open(path, "w", encoding="utf-8") as f:
            f.write(source)
        ini = os.path.join(folder, "pytest.ini")
        with open(ini, "w", encoding="utf-8") as f:
            f.write("[pytest]\n")
        args = [
            path,
            "-c",
            ini,
            "--rootdir",
            folder,
            "--confcutdir",
            folder,
            "-q",
            "--color=no",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:faulthandler",
            "--capture=no",  # prints go to the bounded sink below, never into memory
            "--import-mode=importlib",
            "-o",
            "python_files=*.py",
        ]
        if profile is not None:
            args += ["-p", "_hypothesis_pytestplugin", f"--hypothesis-seed={seed}"]
        with captured(BoundedOutput(limit=0)), collector.timer():  # pytest's own report never floods
            collector.exit_code = int(pytest.main(args, plugins=[collector]))
    finally:
        for key, value in environ.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        if profile is not None:
            profile()
        restore()
        _forget(folder)
        shutil.rmtree(folder, ignore_errors=True)
    if INTERRUPTS["seen"]:
        raise KeyboardInterrupt  # the engine's time limit: pytest caught it, the engine must see it
    return collector.result()


class _Collector:
    """The pytest plugin that keeps one record per test and stops a test past its time."""

    def __init__(self, folder: str, timeout: float):
        self.folder = folder
        self.timeout = timeout
        self.tests: dict = {}  # name -> record, in the order pytest ran them
        self.problem: str | None = None
        self.interrupted: str | None = None
        self.exit_code = 0

    # ---------------------------------------------------------------- hooks

    def pytest_collectreport(self, report) -> None:
        if self.problem is not None:
            return
        if report.failed:
            self.problem = "the test file could not be loaded: " + _message(report)
        elif report.skipped and isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
            reason = str(report.longrepr[2]).removeprefix("Skipped: ")
            self.problem = f"the test file skipped all of its tests ({reason})"

    def pytest_runtest_logreport(self, report) -> None:
        name = report.nodeid.split("::", 1)[-1]
        record = self.tests.get(name)
        if record is None:
            record = self.tests[name] = {"name": name, "outcome": "passed", "message": "", "line": None}
        if report.passed or record["outcome"] != "passed":
            return  # the first problem of a test (setup, call or teardown) is the one it reports
        if report.skipped:
            record.update(self._skipped(report))
        elif _timed_out(report):
            record.update(outcome="timeout", message=f"ran past its time limit of {self.timeout:g} s and was stopped")
        else:
            record.update(
                outcome="failed" if report.when == "call" else "error",
                message=_message(report),
                line=_line(report, self.folder),
            )

    def pytest_keyboard_interrupt(self, excinfo) -> None:
        self.interrupted = "the tests stopped early: KeyboardInterrupt was raised while they ran"

    def _skipped(self, report) -> dict:
        reason = ""
        where = None
        longrepr = report.longrepr
        if isinstance(longrepr, tuple) and len(longrepr) == 3:
            where, _, reason = longrepr
            reason = str(reason).removeprefix("Skipped: ")
        if hasattr(report, "wasxfail") or (where and _inside(str(where), self.folder)):
            return {"outcome": "skipped", "message": reason}
        # A skip the test file did not ask for: the code under test skipped its own test.
        return {
            "outcome": "failed",
            "message": f"your code skipped this test ({reason})" if reason else "your code skipped this test",
        }

    # ---------------------------------------------------------------- time

    @contextlib.contextmanager
    def timer(self):
        """Each test's call gets ``timeout`` seconds of CPU time (SIGPROF), where signals work."""
        usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
        if not usable:
            yield
            return

        def stop(signum, frame):
            raise TestTimedOut

        previous = signal.signal(signal.SIGPROF, stop)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.signal(signal.SIGPROF, previous)

    def pytest_runtest_setup(self, item) -> None:
        self._arm(self.timeout)

    def pytest_runtest_teardown(self, item) -> None:
        self._arm(0)

    def _arm(self, seconds: float) -> None:
        if hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread():
            with contextlib.suppress(ValueError, OSError):
                signal.setitimer(signal.ITIMER_PROF, seconds)

    # ---------------------------------------------------------------- result

    def result(self) -> dict:
        tests = list(self.tests.values())
        if len(tests) > MAX_TESTS:
            rest = tests[MAX_TESTS - 1 :]
            failed = sum(t["outcome"] in ("failed", "error", "timeout") for t in rest)
            more = {
                "name": f"{len(rest)} more tests",
                "outcome": "failed" if failed else "passed",
                "message": f"{failed} of them fail" if failed else "",
                "line": None,
            }
            tests = [*tests[: MAX_TESTS - 1], more]
        problem = self.problem or (self.interrupted if tests else None)
        if problem is None and not tests:
            # 5: no tests collected; 3 and 4 (pytest's internal and usage errors) are not the file's.
            problem = (
                "pytest found no test in the test file"
                if self.exit_code in (0, 5)
                else f"pytest stopped before running any test (exit code {self.exit_code})"
            )
        return {"tests": tests, "problem": problem}


def _timed_out(report) -> bool:
    crash = getattr(report.longrepr, "reprcrash", None)
    return crash is not None and "TestTimedOut" in str(getattr(crash, "message", ""))


def _message(report) -> str:
    """pytest's own words for a failure: the rewritten assertion with its sub-values, or the
    exception; hypothesis's falsifying example follows it."""
    crash = getattr(report.longrepr, "reprcrash", None)
    text = str(getattr(crash, "message", "") or "")
    if not text:
        long = _ANSI.sub("", str(getattr(report, "longreprtext", "") or ""))
        lines = [line[1:].strip() for line in long.splitlines() if line.startswith("E ")]
        text = "\n".join(lines) or (long.strip().splitlines() or [""])[-1]
    lines = [line.rstrip() for line in _ANSI.sub("", text).splitlines() if line.strip()]
    if len(lines) > MAX_LINES:
        lines = [*lines[:MAX_LINES], f"... {len(lines) - MAX_LINES} more lines"]
    text = "\n".join(lines)
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


def _line(report, folder: str) -> int | None:
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None and _inside(str(getattr(crash, "path", "")), folder):
        return int(crash.lineno)
    location = getattr(report, "location", None)
    return int(location[1]) + 1 if location and isinstance(location[1], int) else None


def _inside(path: str, folder: str) -> bool:
    """Whether ``path`` is the test file's (pytest may name it through a resolved link)."""
    if not path or path.startswith("<"):
        return False
    real = os.path.realpath(folder)
    return path.startswith(folder) or os.path.realpath(path).startswith(real)


def _as_module(module, name: str):
    """Register ``module`` as ``name`` (and its parents as empty packages); undo afterwards."""
    parts = name.split(".")
    saved = {}
    for n in range(1, len(parts) + 1):
        key = ".".join(parts[:n])
        saved[key] = sys.modules.get(key)
        if n == len(parts):
            sys.modules[key] = module
        else:
            package = types.ModuleType(key)
            package.__path__ = []
            sys.modules[key] = package
        if n > 1:
            setattr(sys.modules[".".join(parts[: n - 1])], parts[n - 1], sys.modules[key])

    def restore():
        for key, old in saved.items():
            if old is None:
                sys.modules.pop(key, None)
            else:
                sys.modules[key] = old

    return restore


def _hypothesis_profile():
    """Hypothesis for a grader: no deadline (a busy machine is not a slow test), no database
    on disk, no health check about speed. Returns how to put the previous profile back, or
    None without hypothesis."""
    try:
        from hypothesis import HealthCheck, Phase, settings
    except ImportError:
        return None
    # The explain phase names lines of pytest's and hypothesis's own files: noise to a learner.
    phases = [phase for phase in Phase if phase.name != "explain"]
    # get_current_profile_name arrived in hypothesis 6.119; older ones keep the name privately.
    current = getattr(settings, "get_current_profile_name", None)
    previous = (current() if current else getattr(settings, "_current_profile", None)) or "default"
    settings.register_profile(
        "ptfund-tests",
        deadline=None,
        database=None,
        print_blob=False,
        phases=phases,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
    )
    settings.load_profile("ptfund-tests")
    return lambda: settings.load_profile(previous)


def _forget(folder: str) -> None:
    """The test module pytest imported from ``folder``: another world imports it afresh."""
    for key, mod in list(sys.modules.items()):
        if str(getattr(mod, "__file__", "") or "").startswith(folder):
            sys.modules.pop(key, None)
