"""Device detection, done by the kernel itself: the UI process never imports torch.

``boot_source`` is the code every kernel runs once at start: import torch, install the
check library, pick the device (detected, or the ``--device`` override), put ``DEVICE`` in
the learner's namespace, and leave a JSON report that the engine reads back through
``user_expressions``.
"""

from __future__ import annotations

import ast
import json
from typing import Any

from tutor.checks.vocabulary import DEVICES
from tutor.engine.events import DeviceInfo
from tutor.engine.inject import checks_bootstrap, checks_digest_now

# Read back after the boot code ran; a module the boot code registers, not a user name.
REPORT_EXPRESSION = "__import__('sys').modules['_ptfund_kernel'].report"
PID_EXPRESSION = "__import__('os').getpid()"

BOOT_FUNCTIONS = r'''
def __ptfund_plain_deep_tracebacks(shell, max_frames=100):
    """IPython's rich traceback costs ~10 ms a frame, so an unbounded recursion (1000
    frames) took 10+ s to report, twice (display and history). Past ``max_frames`` use the
    standard library's, which folds repeats into "[Previous line repeated N more times]"."""
    import traceback

    itb = shell.InteractiveTB
    rich = itb.structured_traceback

    def structured_traceback(etype, evalue, etb=None, tb_offset=None, *args, **kwargs):
        depth, tb = 0, etb
        while tb is not None and depth <= max_frames:
            depth, tb = depth + 1, tb.tb_next
        if depth <= max_frames:
            return rich(etype, evalue, etb, tb_offset, *args, **kwargs)
        skip = tb_offset if tb_offset is not None else (getattr(itb, "tb_offset", 0) or 0)
        tb = etb
        for _ in range(skip):
            if tb is not None and tb.tb_next is not None:
                tb = tb.tb_next
        text = "".join(traceback.format_exception(etype, evalue, tb))
        return text.rstrip("\n").split("\n")

    itb.structured_traceback = structured_traceback


def __ptfund_flush_before_os_exit():
    """os._exit ends the process at once: what the learner printed just before it still sat
    in the kernel's output buffers. Flush them and give the IOPub thread a moment to send.
    Only this kernel's own exit: its children (DataLoader workers) end as before."""
    import os, sys, time

    real, kernel_pid = os._exit, os.getpid()
    if getattr(real, "ptfund_flushes", False):
        return

    def _exit(status):
        if os.getpid() == kernel_pid:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except BaseException:
                    pass
            time.sleep(0.2)  # the flushed message leaves through zmq's own I/O thread
        real(status)

    _exit.ptfund_flushes = True
    os._exit = _exit


def __ptfund_boot(namespace, requested, checks_source, digest, threads=None):
    import json, os, platform, socket, sys, types
    __ptfund_flush_before_os_exit()
    # A confined kernel is pid 1 of its own namespace: its pid for the tutor is kept aside.
    report = {"pid": int(os.environ.get("PTFUND_TUTOR_KERNEL_PID") or os.getpid()), "host": socket.gethostname(),
              "python_version": platform.python_version(), "executable": sys.executable}
    state = sys.modules.get("_ptfund_kernel") or types.ModuleType("_ptfund_kernel")
    sys.modules["_ptfund_kernel"] = state
    state.report = json.dumps(report)
    try:
        import torch
    except BaseException as exc:
        report["error"] = ("torch cannot be imported in the kernel (%s: %s)."
                           % (type(exc).__name__, exc))
        state.report = json.dumps(report)
        return
    report["torch_version"] = torch.__version__
    if threads:
        # Kernels side by side (pack test, grade) share the cores: each one's intra-op
        # pool spinning on all of them would slow every kernel down.
        torch.set_num_threads(threads)
    report["threads"] = torch.get_num_threads()
    cuda = torch.cuda.is_available()
    mps_backend = getattr(torch.backends, "mps", None)
    mps = bool(mps_backend is not None and mps_backend.is_available())
    if requested == "cuda" and not cuda:
        if torch.version.cuda is None:
            why = "this torch %s is a CPU-only build" % torch.__version__
        else:
            why = "no GPU is visible to torch (check the driver and CUDA_VISIBLE_DEVICES)"
        report["error"] = "--device cuda was requested, but CUDA is not available: %s." % why
    elif requested == "mps" and not mps:
        report["error"] = ("--device mps was requested, but MPS is not available "
                           "(it needs Apple silicon, macOS 12.3+ and a torch built with MPS).")
    kind = requested or ("cuda" if cuda else "mps" if mps else "cpu")
    if "error" not in report:
        if kind == "cuda":
            name = torch.cuda.get_device_name(0)
        elif kind == "mps":
            name = "Apple MPS"
        else:
            name = "CPU"
        report.update(kind=kind, name=name)
        namespace["DEVICE"] = state.DEVICE = torch.device(kind)
    try:
        from IPython import get_ipython

        shell = get_ipython()
        # Jedi's first completion takes seconds; IPython's own completer answers at once.
        shell.Completer.use_jedi = False
        # exit() would otherwise stop the kernel's event loop: the process ends quietly.
        from IPython.core.autocall import ZMQExitAutocall

        class KeepKernelExit(ZMQExitAutocall):
            def __call__(self, keep_kernel=True):
                super().__call__(keep_kernel=True)

        shell.exiter = KeepKernelExit(shell)
        for name in ("exit", "quit"):
            shell.user_ns[name] = shell.exiter

        __ptfund_plain_deep_tracebacks(shell)
    except Exception:
        pass
    try:
        if checks_source is not None:
            exec(compile(checks_source, "<ptfund_checks bootstrap>", "exec"), {})
        elif not any((getattr(f, "ptfund_package", None), getattr(f, "ptfund_digest", None))
                     == ("ptfund_checks", digest) for f in sys.meta_path):
            report["checks_missing"] = True  # the engine sends the library's source next
        if not report.get("checks_missing"):
            # Loaded now, so a check's first use costs nothing on the critical path.
            import ptfund_checks  # noqa: F401
    except BaseException as exc:
        report["checks_error"] = "%s: %s" % (type(exc).__name__, exc)
    state.report = json.dumps(report)
'''


def boot_source(requested: str | None, checks_installed: bool = False, threads: int | None = None) -> str:
    """The boot cell. ``threads``: torch's intra-op threads for this kernel (None: torch's
    default, all cores). ``checks_installed``: a kernel forked from the fork server, which has
    the check library and the boot functions already (``install_boot``): the cell calls
    them and carries the library's digest, not its ~100 KB of source nor the boot code's
    5 KB (ipykernel hashes and IPython tokenizes every cell). A kernel whose library
    differs reports ``checks_missing`` and gets ``CHECKS_SOURCE``."""
    if requested is not None and requested not in DEVICES:
        raise ValueError(f"unknown device {requested!r}; expected one of {', '.join(DEVICES)}")
    if checks_installed:
        digest = checks_digest_now()
        boot = "__import__('sys').modules['_ptfund_kernel'].boot"
        return f"{boot}(globals(), {requested!r}, None, {digest!r}, {threads!r})\n"
    source, digest = checks_bootstrap()
    return (
        BOOT_FUNCTIONS
        + f"\n__ptfund_boot(globals(), {requested!r}, {source!r}, {digest!r}, {threads!r})\n"
        + "del __ptfund_boot, __ptfund_plain_deep_tracebacks, __ptfund_flush_before_os_exit\n"
    )


def install_boot() -> None:
    """Define the boot functions in this process as ``_ptfund_kernel.boot`` (the fork
    server does, so that its kernels' boot cells are one call)."""
    import sys
    import types

    state = sys.modules.get("_ptfund_kernel") or types.ModuleType("_ptfund_kernel")
    sys.modules["_ptfund_kernel"] = state
    exec(compile(BOOT_FUNCTIONS, "<ptfund boot>", "exec"), vars(state))
    vars(state)["boot"] = vars(state)["__ptfund_boot"]


# Sent after a boot that reported checks_missing: installs the library, updates the report.
CHECKS_SOURCE = r"""
def __ptfund_install(source):
    import json, sys
    state = sys.modules["_ptfund_kernel"]
    report = json.loads(state.report)
    report.pop("checks_missing", None)
    try:
        exec(compile(source, "<ptfund_checks bootstrap>", "exec"), {})
        import ptfund_checks  # noqa: F401
    except BaseException as exc:
        report["checks_error"] = "%s: %s" % (type(exc).__name__, exc)
    state.report = json.dumps(report)


__ptfund_install(__SOURCE__)
del __ptfund_install
"""


def checks_source() -> str:
    return CHECKS_SOURCE.replace("__SOURCE__", repr(checks_bootstrap()[0]), 1)


def parse_expression(reply_content: dict, key: str) -> Any:
    """The Python value of a user_expression from an execute_reply, or None."""
    entry = (reply_content.get("user_expressions") or {}).get(key) or {}
    if entry.get("status") != "ok":
        return None
    text = (entry.get("data") or {}).get("text/plain")
    if text is None:
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None


def parse_report(reply_content: dict) -> dict:
    raw = parse_expression(reply_content, "report")
    if not isinstance(raw, str):
        return {}
    try:
        report = json.loads(raw)
    except ValueError:
        return {}
    return report if isinstance(report, dict) else {}


def device_info(report: dict) -> DeviceInfo:
    return DeviceInfo(
        kind=report.get("kind", "cpu"),
        name=report.get("name", "CPU"),
        torch_version=report.get("torch_version", ""),
        python_version=report.get("python_version", ""),
    )
