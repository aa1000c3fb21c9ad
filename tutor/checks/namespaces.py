"""Running setup, reference solution and learner code in their own namespaces.

Code is compiled under a pseudo file name registered in linecache so tracebacks show the
learner's own lines; errors keep only the frames of that file, so the learner never sees
the checker's (or torch's) internals.
"""

import builtins
import contextlib
import io
import linecache
import random
import traceback
import types
from dataclasses import dataclass, field

import numpy as np
import torch

from . import errorcause, setupnames
from .describe import exception_text, shorten

YOUR_CODE = "<your code>"
SETUP = "<setup>"
SOLUTION = "<solution>"
JUDGE_SETUP = "<judge setup>"
CHECK = "<check>"
MAX_FRAMES = 40  # frames kept in a learner's traceback

# Set by report.py while a verification runs: "armed" once its SIGINT handler is in place,
# "seen" once the engine's interrupt (the time limit) arrived.
INTERRUPTS = {"armed": False, "seen": False}


def learner_interrupt() -> bool:
    """A KeyboardInterrupt now comes from learner code, not from the engine's time limit."""
    return INTERRUPTS["armed"] and not INTERRUPTS["seen"]


# A DataLoader being shut down waits MP_STATUS_CHECK_INTERVAL (5 s) for each worker to
# exit before it kills it, and workers whose dataset failed often wait out the whole of
# it: a check builds a dozen loaders, and a dataset that raises then took most of a minute
# to verify (past its time limit on a busy machine). Half a second, then the same kill.
torch.utils.data._utils.MP_STATUS_CHECK_INTERVAL = 0.5

# Names a check expression may use even when the learner's code never imported them.
FALLBACKS = {"torch": torch, "np": np, "nn": torch.nn, "F": torch.nn.functional}


def seed_all(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    if torch.cuda.is_initialized() or not torch.cuda.is_available():
        # torch.manual_seed would queue the GPU seeding for later, recording a stack trace
        # to do so (milliseconds, several times per verification); with no GPU to wait for,
        # the generators that exist are seeded now.
        _seed_started_generators(seed)
    else:
        torch.manual_seed(seed)  # seeds every CUDA device once CUDA starts


def _seed_started_generators(seed: int) -> None:
    torch.default_generator.manual_seed(seed)
    if torch.cuda.is_initialized():
        torch.cuda.manual_seed_all(seed)
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        torch.mps.manual_seed(seed)


MODULE_KEY = "__ptfund_module__"  # in a namespace that is a module's: the module itself


def new_namespace(device: torch.device, module: str | None = None) -> dict:
    """A namespace for setup and code; with ``module`` (an exercise with a pytest check),
    the ``__dict__`` of a module of that name, so the learner's functions' globals are the
    module's own and tests that import it (or patch it) see the same names."""
    base = {"__name__": "__main__", "__builtins__": builtins, "DEVICE": device}
    if not module:
        return base
    mod = types.ModuleType(module)
    ns = mod.__dict__
    ns.update(base, __name__=module)
    ns[MODULE_KEY] = mod
    return ns


def register_source(filename: str, source: str) -> None:
    # mtime None: linecache.checkcache leaves the entry alone (it has no file to stat).
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)


def compile_code(source: str, filename: str, mode: str):
    # dont_inherit: the checker's own __future__ flags must not change learner code.
    return compile(source, filename, mode, dont_inherit=True)


@dataclass
class CodeError:
    """An exception raised by setup, the reference solution or the learner's code."""

    stage: str  # "setup" | "solution" | "code"
    ename: str
    evalue: str
    line: int | None  # where it was raised (deepest frame of that code)
    traceback: list = field(default_factory=list)
    stopped_line: int | None = None  # the top-level line the run stopped at
    syntax: bool = False
    context: dict | None = None  # errorcause.context: the line it was raised at, the tensors it names

    def as_dict(self) -> dict:
        return {
            "stage": self.stage,
            "ename": self.ename,
            "evalue": self.evalue,
            "line": self.line,
            "traceback": list(self.traceback),
            "context": self.context,
        }

    def phrase(self) -> str:
        """'your code stopped at line 3 with ValueError: ...' (for 'x is not defined: ...')."""
        what = f"{self.ename}: {shorten(self.evalue, 160)}" if self.evalue else self.ename
        if self.syntax:
            where = f" at line {self.line}" if self.line else ""
            return f"your code did not run ({what}{where})"
        where = f" at line {self.stopped_line}" if self.stopped_line else ""
        return f"your code stopped{where} with {what}"


def _lines(chunks) -> list:
    out = []
    for chunk in chunks:
        out.extend(chunk.rstrip("\n").split("\n"))
    return out


def own_frames(exc: BaseException, filename: str = YOUR_CODE) -> list:
    return [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]


def filtered_traceback(exc: BaseException, filename: str = YOUR_CODE) -> list:
    """Traceback lines with only ``filename``'s frames, then the exception line(s)."""
    frames = own_frames(exc, filename)
    lines = []
    if frames:
        lines.append("Traceback (most recent call last):")
        if len(frames) > MAX_FRAMES:  # deep (non-repeating) recursion: the ends tell the story
            head, tail = frames[:10], frames[-(MAX_FRAMES - 10) :]
            lines.extend(_lines(traceback.format_list(head)))
            lines.append(f"  ... {len(frames) - len(head) - len(tail)} more frames ...")
            lines.extend(_lines(traceback.format_list(tail)))
        else:
            lines.extend(_lines(traceback.format_list(frames)))
    lines.extend(_lines(traceback.format_exception_only(type(exc), exc)))
    return lines


def code_error(exc: BaseException, filename: str, stage: str) -> CodeError:
    frames = own_frames(exc, filename)
    syntax = isinstance(exc, SyntaxError) and not frames
    if frames:
        line, stopped = frames[-1].lineno, frames[0].lineno
    elif isinstance(exc, SyntaxError):  # syntax: no frames of the learner's own
        line = stopped = exc.lineno
    else:
        line = stopped = None
    if isinstance(exc, SyntaxError):
        evalue = exc.msg or ""
    elif isinstance(exc, SystemExit):
        evalue = f"sys.exit({exc.code!r}) ends the program; remove it"
    else:
        evalue = exception_text(exc)
    where = None if syntax else errorcause.context(exc, filename)
    return CodeError(stage, type(exc).__name__, evalue, line, filtered_traceback(exc, filename), stopped, syntax, where)


@contextlib.contextmanager
def torch_state_guard():
    """Undo global torch switches a snippet flips, so the next namespace starts equal."""
    grad = torch.is_grad_enabled()
    dtype = torch.get_default_dtype()
    get_device = getattr(torch, "get_default_device", None)
    device = get_device() if get_device else None
    try:
        yield
    finally:
        torch.set_grad_enabled(grad)
        torch.set_default_dtype(dtype)
        if get_device is not None and device is not None and get_device() != device:
            # None (not "cpu") for the initial state: a cpu DeviceContext slows every call.
            torch.set_default_device(None if device.type == "cpu" else device)


JUDGED_KEY = "__ptfund_judged__"  # in a reference namespace: the names its judge setup bound


def run_judge_setup(source: str, ns: dict) -> CodeError | None:
    """The exercise's judge setup in the reference namespace ``ns``, after setup and before
    the reference solution: what only the judge may hold (expected values, an oracle, helpers
    that compute them), so the learner's kernel, which runs the setup alone, never does. The
    names it binds are recorded under JUDGED_KEY: checks read them in place of the learner's
    names (:func:`judged_names`). The random generators are left as setup left them, so the
    reference draws what the learner's code draws."""
    if not (source or "").strip():
        return None
    before = {name: id(value) for name, value in ns.items()}
    states = random.getstate(), np.random.get_state(), torch.random.get_rng_state()
    try:
        error = run_code(source, ns, JUDGE_SETUP, "setup")
    finally:
        random.setstate(states[0])
        np.random.set_state(states[1])
        torch.random.set_rng_state(states[2])
    ns[JUDGED_KEY] = tuple(name for name, value in ns.items() if name != JUDGED_KEY and before.get(name) != id(value))
    return error


def run_reference_setup(setup: str, ns: dict, judge_setup: str = "", keep=()) -> CodeError | None:
    """A reference namespace's setup: the setup, then what it bound to the names checks read
    as ``_setup.NAME`` kept (``keep``, setupnames.py), then the judge setup."""
    error = run_code(setup, ns, SETUP, "setup")
    if error is None:
        setupnames.keep(ns, keep)
        error = run_judge_setup(judge_setup, ns)
    return error


def judged_names(ref: dict) -> dict:
    """The names the judge setup bound in reference namespace ``ref``, with their values."""
    return {name: ref[name] for name in ref.get(JUDGED_KEY, ()) if name in ref}


def run_code(source: str, ns: dict, filename: str, stage: str) -> CodeError | None:
    source = source or ""
    register_source(filename, source)
    try:
        code = compile_code(source, filename, "exec")
    except (SyntaxError, ValueError) as exc:  # ValueError: null bytes in the source
        return code_error(exc, filename, stage)
    with torch_state_guard():
        try:
            exec(code, ns)
        except KeyboardInterrupt as exc:
            if not learner_interrupt():
                raise  # the kernel was interrupted (time limit): let the engine see it
            return code_error(exc, filename, stage)
        except BaseException as exc:  # SystemExit included: it must not end the kernel
            return code_error(exc, filename, stage)
    return None


class BoundedOutput(io.TextIOBase):
    """Collects what code prints, keeping at most ``limit`` characters."""

    def __init__(self, limit: int = 20_000):
        self.limit = limit
        self.parts: list = []
        self.size = 0
        self.dropped = 0

    def writable(self) -> bool:
        return True

    def write(self, text) -> int:
        text = str(text)
        room = self.limit - self.size
        if room > 0:
            self.parts.append(text[:room])
            self.size += min(room, len(text))
        self.dropped += max(0, len(text) - max(room, 0))
        return len(text)

    def getvalue(self) -> str:
        text = "".join(self.parts)
        if self.dropped:
            text += f"\n… {self.dropped:,} more characters not shown"
        return text


@contextlib.contextmanager
def captured(buffer: BoundedOutput):
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
        yield
