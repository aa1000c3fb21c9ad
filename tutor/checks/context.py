"""What every check kind gets: both namespaces, evaluation helpers, and the wording of
failures caused by the learner's objects (undefined names, missing attributes)."""

import ast
import builtins
import contextlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from . import causes, errorcause, setupnames, signatures, wire, wrongdim
from .describe import exception_phrase, shorten
from .guard import scan
from .namespaces import CHECK, FALLBACKS, YOUR_CODE, CodeError, compile_code, judged_names, own_frames, seed_all
from .wire import Raised

_NOT_LEARNERS = frozenset(FALLBACKS) | frozenset(dir(builtins)) | {"DEVICE", "ref"}


def _graph(t) -> frozenset:
    """The class names of the autograd nodes ``t`` was computed through (``MulBackward0``,
    ``AccumulateGrad``), read in the learner's kernel: a tensor that crossed keeps its values,
    not its graph, so ``t.grad_fn`` here cannot say how the learner's tensor was made."""
    return frozenset(wire.graph_ops(t) or ()) if isinstance(t, torch.Tensor) else frozenset()


# What a check's expression may call besides the exercise's names, after them: the code
# cannot shadow these.
CHECK_HELPERS = {"_graph": _graph}


@dataclass
class Outcome:
    """One check's verdict; the runner adds id, kind and the authored message."""

    passed: bool
    message: str
    expected: str | None = None
    actual: str | None = None
    details: dict = field(default_factory=dict)


class AuthoringError(Exception):
    """The exercise itself is broken (e.g. the expected value cannot be computed)."""


def private_names(expr: str | None) -> list:
    """Names in ``expr`` that start with ``_``: setup's private helpers, never shown to a learner."""
    return sorted(n for n in _names_in(expr) if n.startswith("_"))


def display(expr: str | None, fallback: str = "the checked value") -> str:
    """How feedback names a checked expression: the expression itself on one line (t,
    t.stride(), model.fc1); shortened when long; never with setup's ``_`` helpers in it,
    which become 'the result checked for NAMES' (the learner's own names in it). What the
    setup bound (``_setup.a``) is said by its name (a)."""
    text = setupnames.by_name(" ".join((expr or "").split()))
    if not text:
        return fallback
    if private_names(text):
        visible = sorted(n for n in _names_in(text) if not n.startswith("_") and n not in _NOT_LEARNERS)
        return f"the result checked for {', '.join(visible)}" if visible else fallback
    return shorten(text, 120)


def _names_in(expr: str | None) -> set:
    try:
        tree = ast.parse(expr or "")
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def attribute_owner(expr: str | None, attr: str) -> str | None:
    """For `model.fc1.weight` and attr 'fc1': 'model' (the thing that lacks it)."""
    try:
        tree = ast.parse(expr or "")
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == attr:
            return ast.unparse(node.value)
    return None


# What takes a mean, or may: torch's and NumPy's means, a division, and the losses, whose
# default reduction is a mean.
_AVERAGING = frozenset({"mean", "nanmean", "average", "div", "div_", "true_divide", "floor_divide", "divide"})


def averages(source: str) -> bool:
    """Whether ``source`` averages or divides anywhere it can be read to: a call of a mean, a
    division, or of a loss (any name with "loss" in it, ``cross_entropy``, ``criterion``);
    True for no text or text that does not parse (nothing is ruled out)."""
    if not (source or "").strip():
        return True  # no text to read (a context made without it): nothing is ruled out
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return True
    for node in ast.walk(tree):
        if isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(node.op, (ast.Div, ast.FloorDiv)):
            return True
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in _AVERAGING or "loss" in name.lower() or name in ("cross_entropy", "criterion"):
                return True
    return False


def _real_numbers(value, size: int):
    """A tensor's or array's values as float64 numbers, where it holds ``size`` real ones."""
    if isinstance(value, torch.Tensor):
        if value.is_meta or value.is_complex() or value.dtype == torch.bool or value.numel() != size:
            return None
        return value.detach().cpu().double().reshape(-1).numpy()
    if isinstance(value, np.ndarray) and value.size == size and value.dtype.kind in "fiu":
        return value.astype(np.float64).reshape(-1)
    return None


def _pattern_topic(sentence: str) -> str:
    for key in ("in another order", "wrong order", "exactly"):
        if key in sentence:
            return f"pattern:{key}"
    return causes.topic(sentence) or "pattern"


def raised_text(exc: BaseException) -> str:
    """What a check's failure by an exception is keyed by (runner._unauthored_common_raises)
    and read for a known error's meaning (signatures.for_error: torch's messages name the
    cause past their first line)."""
    name = getattr(exc, "ename", None) if type(exc).__name__ == "Raised" else None  # one from the learner's kernel
    return f"{name or type(exc).__name__}: {str(exc)[:1500]}"


def _factor_of(pattern) -> float | None:
    """The whole factor a reading of a constant factor states (k, 1/k, p/q); None for others."""
    if isinstance(pattern, signatures.Scaled):
        return float(pattern.k) if pattern.up else 1.0 / pattern.k
    if isinstance(pattern, signatures.Ratio):
        return pattern.p / pattern.q
    return None


class Context:
    def __init__(
        self,
        learner: Any,  # dict, or the judge's World
        ref: dict,
        device: torch.device,
        seed: int,
        code_error: CodeError | None = None,
        solution_error: CodeError | None = None,
    ):
        # A dict of the learner's names, or (in the judge) a world that reads them from the
        # learner's kernel and keeps them fresh after calls into the learner's code.
        self._learner = learner
        self.ref = ref
        self.device = device
        self.seed = seed
        self.code_error = code_error
        self.solution_error = solution_error
        self.findings: list = []  # built-in signature messages, in order found
        self.topics: dict = {}  # finding -> topic, so a more precise sentence can replace it
        self.tracer: Any = None  # a trace.Tracer while the run is traced
        self.segment: str | int = "run"  # which check is running (its index), for the trace
        self.label: str | None = None  # the running check's learner-facing label, if it has one
        self.input_shift = 0  # added to generated inputs' seeds: another world draws other inputs
        self.code = ""  # the learner's source (source checks read it)
        self.solution = ""  # the reference solution's source
        self.untouched: set = set()  # the setup's tensors the code left as setup made them (untouched.py)
        self.kept: set = set()  # names holding, at the end, the values the setup gave them (untouched.py)
        self.reads: dict | None = None  # the normal runs' tensor reads, for the device run (reads.py)
        # name shown -> (learner's value, expected value) of each value or tensor check that failed
        self.failed_values: dict = {}

    @property
    def learner(self) -> dict:
        source = self._learner
        return source.namespace() if hasattr(source, "namespace") else source

    @property
    def remote(self):
        """The judge's client of the learner's kernel (None when both run in this process)."""
        return getattr(self._learner, "client", None)

    @property
    def world(self) -> str:
        """The name of the learner's world these checks look at ("main", "world-2", ...)."""
        return str(getattr(self._learner, "name", "main"))

    def seed_learner(self, seed: int) -> None:
        """Seed this process, and the learner's kernel before its next call."""
        seed_all(seed)
        if self.remote is not None:
            self.remote.pending_seed = seed

    def display(self, expr: str | None, fallback: str = "the checked value") -> str:
        """The running check's label, else :func:`display` of ``expr``."""
        return self.label or display(expr, fallback)

    def side(self, side: str, call: int | None = None):
        """Record protocol calls made while ``side`` ("learner" or "ref") runs, under the current
        check (and ``call``: which of a function check's calls, numbered alike on both sides)."""
        if self.tracer is None:
            return contextlib.nullcontext()
        return self.tracer.recording(side, self.segment, call)

    # ------------------------------------------------------------ evaluation

    @staticmethod
    def scope(ns: dict, extra: dict | None = None) -> dict:
        # A copy: a check's own assignments never leak into the learner's namespace.
        scope = dict(FALLBACKS)
        scope.update(ns)
        if extra:
            scope.update(extra)
        return scope

    def learner_scope(self, extra: dict | None = None) -> dict:
        """The scope of a check's expression about the learner's code: the learner's names,
        then those the judge setup bound (the judge's own: the code cannot shadow them), then
        ``extra``."""
        learner = self.learner
        return self.scope(
            learner, {**judged_names(self.ref), **setupnames.scope_entry(learner), **CHECK_HELPERS, **(extra or {})}
        )

    def eval_learner(self, expr: str, extra: dict | None = None):
        code = compile_code(expr, CHECK, "eval")
        self.seed_learner(self.seed)  # both sides draw the same random numbers (probes, dropout)
        with self.side("learner"):
            value = eval(code, self.learner_scope(extra))
        scan(value, display(expr))
        return value

    def eval_ref(self, expr: str, traced: bool = True):
        """The expected value of ``expr``; ``traced=False`` for an author's stated expected
        value: it runs no reference code, so there is no reference trace to compare with."""
        try:
            code = compile_code(expr, CHECK, "eval")
            seed_all(self.seed)
            with self.side("ref") if traced else contextlib.nullcontext():
                return eval(code, self.scope(self.ref, {**setupnames.scope_entry(self.ref), **CHECK_HELPERS}))
        except Exception as exc:
            why = (
                f"the reference solution failed ({self.solution_error.ename})"
                if self.solution_error
                else exception_phrase(exc)
            )
            raise AuthoringError(f"the expected value ({display(expr)}) could not be computed: {why}") from exc

    def exec_learner(self, source: str, extra: dict | None = None):
        """Run an expression or statements; returns the expression's value (or None)."""
        try:
            code = compile_code(source, CHECK, "eval")
        except SyntaxError:
            code = compile_code(source, CHECK, "exec")
        self.seed_learner(self.seed)
        with self.side("learner"):
            return eval(code, self.learner_scope(extra))

    # ------------------------------------------------------------ wording

    def undefined(self, name: str) -> str:
        if self.code_error is not None and self.code_error.stage == "code":
            return f"{name} is not defined: {self.code_error.phrase()}"
        return f"you did not define {name}"

    def explain(self, exc: BaseException, expr: str | None = None, shown: bool = True) -> str:
        """A learner-facing sentence for an exception raised while checking ``expr``.

        ``shown=False`` keeps ``expr`` out of the sentence (python checks: never show code)."""
        what = self.display(expr) if shown else (self.label or "the check")
        self.note_error_cause(exc)
        if isinstance(exc, Raised):
            return self._explain_raised(exc, expr, what)
        mine = own_frames(exc)
        name = getattr(exc, "name", None)
        if isinstance(exc, NameError) and not mine and name and (expr is None or name in _names_in(expr)):
            return self.undefined(name)
        if isinstance(exc, AttributeError) and not mine and name:
            owner = attribute_owner(expr, name)
            if owner:
                obj = getattr(exc, "obj", object())
                if obj is None:
                    return f"{owner} is None, so it has no attribute '{name}'"
                if isinstance(obj, type) and issubclass(obj, torch.nn.Module):
                    return f"{owner} is the class {obj.__name__}, not an instance, so it has no attribute '{name}'"
                return f"{owner} has no attribute '{name}'"
        where = f" at line {mine[-1].lineno} of your code" if mine else ""
        if isinstance(exc, RecursionError):
            return f"{what} recursed without end{where} (RecursionError)"
        return f"{what} raised {exception_phrase(exc)}{where}"

    def _explain_raised(self, exc: Raised, expr: str | None, what: str) -> str:
        """The same sentences for an exception the learner's kernel reported as data."""
        if exc.ename == "NameError" and exc.name and (expr is None or exc.name in _names_in(expr)):
            return self.undefined(exc.name)
        if "AttributeError" in exc.names and exc.name and exc.line is None:
            owner = attribute_owner(expr, exc.name)
            if owner:
                if exc.owner == "none":
                    return f"{owner} is None, so it has no attribute '{exc.name}'"
                if exc.owner.startswith("module-class:"):
                    cls = exc.owner.split(":", 1)[1]
                    return f"{owner} is the class {cls}, not an instance, so it has no attribute '{exc.name}'"
                return f"{owner} has no attribute '{exc.name}'"
        where = f" at line {exc.line} of your code" if exc.line else ""
        if exc.ename == "RecursionError":
            return f"{what} recursed without end{where} (RecursionError)"
        return f"{what} raised {exception_phrase(exc)}{where}"

    # ------------------------------------------------------------ signatures

    def note_error_cause(self, exc: BaseException, what: str = "your code") -> None:
        """Note what the learner's line held when ``exc`` was raised there (errorcause.py)."""
        if isinstance(exc, Raised):
            data, ename = exc.context, exc.ename
        else:
            data, ename = errorcause.context(exc, YOUR_CODE), type(exc).__name__
        cause = errorcause.sentence(data, ename, what, message=str(exc))
        if cause:
            self.note(cause)  # no topic: its id is a hash of the sentence, one per line and error
            dim = wrongdim.sentence(data, str(exc), self.code, self.solution)
            if dim:
                self.note(dim)

    def note(self, message: str, topic: str | None = None) -> None:
        if message not in self.findings:
            self.findings.append(message)
            if topic:
                self.topics[message] = topic

    def absorb(self, problems, inputs=()) -> list[tuple[str, float | None]]:
        """Record built-in signatures carried by comparison problems, each said only as far as
        it is established: a whole factor is a sum where a mean was meant only when some
        tensor in play has that many values (``inputs``: a function check's (name, argument)
        pairs), and
        accumulated gradients only when the trace shows the uncleared backward() calls.
        Returns the readings noted that state a factor and no cause (a case too small to
        tell), each with its factor where it is one number (None for one that varies)."""
        bare = []
        for p in problems:
            data = p.data or {}
            pattern, caused = self._reading(data.get("pattern"), inputs)
            if pattern and not any(t == _pattern_topic(pattern) for t in self.topics.values()):
                self.note(pattern, _pattern_topic(pattern))  # one per kind: the first check's names say it
                if not caused:
                    bare.append((pattern, _factor_of(data.get("pattern"))))
            k = data.get("grad_multiple")
            if k:
                self._grad_multiple(data.get("name", "the gradient"), k, inputs)
        return bare

    def _reading(self, pattern, inputs) -> tuple:
        """A signature's pattern as a plain sentence (only plain data crosses to the host), and
        whether it names a cause beyond the factor itself."""
        read = pattern
        if isinstance(pattern, signatures.Scaled):
            # 1/k: the learner's code averages or divides somewhere; k times: the reference's
            # does. Without that, a mean where a sum was meant has nothing to stand on.
            averaged = averages(self.code if not pattern.up else self.solution)
            size = self._count_named(pattern.k, inputs, pattern.name) if averaged else None
            read = (
                signatures.factor_of_a_size(pattern.name, pattern.k, pattern.up, size, exact=pattern.exact)
                if size
                else str(pattern)
            )
        read = self._read_factor(self._read_ratio(read, inputs), inputs)
        factual = isinstance(pattern, (signatures.Scaled, signatures.Ratio, causes.FactorAlong))
        return read, not (factual and read == str(pattern))

    def absorb_reading_of(self, problems, case: str, inputs=(), instead=()) -> None:
        """A reading of values (a term along a dim, a factor) found on another failing case
        than the one a check reports (a larger one, where a small case has too few values to
        read): said with the case it holds for (``inputs``: its (name, argument) pairs).
        ``instead``: (sentence, factor) of factors the reported case gave without a cause,
        replaced by a reading of this case only where it names one and its factor is another:
        a count off by one changes the factor with the count (1/2 on n = 1, 6/7 on n = 6); a
        constant (1.2 on every case, 6/5 on n = 6 by chance) does not."""
        for p in problems:
            pattern, caused = self._reading((p.data or {}).get("pattern"), inputs)
            if not isinstance(pattern, str) or (instead and not caused):
                continue
            factor = _factor_of((p.data or {}).get("pattern"))
            if instead and any(
                (factor is None) != (f is None) or (f is not None and abs(factor - f) <= 1e-6 * abs(f))
                for _, f in instead
            ):
                continue  # another kind of reading, or the same constant factor: nothing new of the count
            for said, _ in instead:
                if said in self.findings:
                    self.findings.remove(said)
                    self.topics.pop(said, None)
            if not any(t == _pattern_topic(pattern) for t in self.topics.values()):
                self.note(f"for {case}, {pattern}", _pattern_topic(pattern))
                return

    def _read_factor(self, pattern, inputs):
        """A factor along one dim as a plain sentence, naming the tensor in play it is a
        simple function of (1/sqrt(rv): a variance where a standard deviation was meant)."""
        if not isinstance(pattern, causes.FactorAlong):
            return pattern
        learner = self.learner
        named = list(inputs) + [
            (key, value)
            for key, value in sorted(self.ref.items(), key=lambda kv: (kv[0] not in learner, kv[0]))
            if not key.startswith("_")
        ]
        candidates = []
        for key, value in named:
            numbers = _real_numbers(value, pattern.factor.size)
            if numbers is not None:
                candidates.append((key, numbers))
        found = causes.factor_is(pattern.fact, pattern.factor, candidates)
        return found or str(pattern)

    def _read_ratio(self, pattern, inputs):
        """A Ratio reading as a plain sentence, with a cause where the sizes in play give one."""
        if not isinstance(pattern, signatures.Ratio):
            return pattern
        # One data point per check: the reading needs both sizes in one tensor's shape,
        # and a function check's cases (other shapes each) are left to their own facts.
        where = None if inputs else self._sizes_named(pattern.p, pattern.q)
        if where:
            return signatures.ratio_of_sizes(pattern.name, pattern.p, pattern.q, where)
        # A divisor one off a count in play (n - 1 for n) is read on one case alone: the
        # count is the size of something the case was given.
        if abs(pattern.p - pattern.q) == 1 and pattern.p >= 3:
            count = self._count_named(pattern.p, inputs, pattern.name)
            if count:
                return signatures.divisor_off_by_one(pattern.name, pattern.p, pattern.q, count)
        return str(pattern)

    def _grad_multiple(self, name: str, k: int, inputs) -> None:
        calls, uncleared, before = self._backward_calls()
        if uncleared >= k:
            self.note(signatures.accumulation(name, k, uncleared, before), "zero_grad")
        elif calls >= 2:
            self.note(signatures.maybe_accumulated(name, k), "zero_grad")
        else:
            size = self._count_named(k, inputs, name) if averages(self.solution) else None
            if size:
                self.note(signatures.factor_of_a_size(name, k, True, size, grad=True), "pattern:exactly")

    def _backward_calls(self) -> tuple[int, int, bool]:
        """The learner's backward() calls in its run and the running check; the most
        backward passes in a row with no zero_grad() between, counting a gradient that was
        there before the first of them (one made before the code ran); and whether there was."""
        if self.tracer is None:
            return 0, 0, False
        events = self.tracer.events("learner") + self.tracer.events("learner", self.segment)
        calls = longest = run = 0
        cleared = before = False
        for e in events:
            if e.kind == "backward":
                if run == 0 and not cleared and e.info.get("stale"):
                    run, before = 1, True
                calls, run = calls + 1, run + 1
                longest = max(longest, run)
            elif e.kind == "zero_grad":
                run, cleared = 0, True
        return calls, longest, before

    def _sizes_named(self, p: int, q: int) -> str | None:
        """Where sizes p and q are two dimensions of one of the reference's tensors (one the
        learner's code has too first: the setup's, not the reference solution's own)."""
        learner = self.learner
        for key, value in sorted(self.ref.items(), key=lambda kv: (kv[0] not in learner, kv[0])):
            shape = getattr(value, "shape", None)
            if key.startswith("_") or not isinstance(value, (torch.Tensor, np.ndarray)) or shape is None:
                continue
            dims = list(shape)
            if p in dims and q in dims:
                return f"{p} and {q} are the sizes of {key}'s dimensions {dims.index(p)} and {dims.index(q)}"
        return None

    def _count_named(self, k: int, inputs=(), about: str = "") -> str | None:
        """Where a count of k values is seen: a dimension's size or a tensor's number of
        elements of a function check's inputs, of the tensors named in ``about``, or (for
        k >= 4: a factor of 2 or 3 is too often a constant) of the reference's other tensors."""
        mentioned = _names_in(about.removesuffix(".grad"))
        ref = sorted(
            ((key, v) for key, v in self.ref.items() if not key.startswith("_") and (k >= 4 or key in mentioned)),
            key=lambda kv: kv[0] not in mentioned,
        )
        named = list(inputs) + ref
        for key, value in named:
            shape = getattr(value, "shape", None)
            if not isinstance(value, (torch.Tensor, np.ndarray)) or shape is None:
                continue
            for d, size in enumerate(shape):
                if size == k:
                    return f"the size of {key}'s dimension {d}"
            if len(shape) > 1 and int(np.prod(shape)) == k:
                return f"the number of elements of {key}"
        return None
