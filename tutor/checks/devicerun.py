"""The device run: the learner's code again, with ``DEVICE`` set to the meta device.

Most learners have no GPU, and on a CPU-only machine ``DEVICE`` is the CPU, so code that
forgets ``device=DEVICE`` passes there and breaks on a GPU. The meta device exists on
every machine: tensors on it have shapes, dtypes and autograd history but no data, and
moving a tensor to it is a real copy, as moving to a GPU is. So for exercises whose
results follow ``DEVICE``, once the normal run passes, setup + reference and setup +
learner code run again with ``DEVICE = torch.device("meta")`` and the tensor checks
compare what still means something there: where each tensor lives, whether it is a leaf
or requires grad, and where its random numbers were drawn. A tensor drawn by the CPU's
generator and then moved holds other numbers than one drawn on a GPU (each device has its
own generator), which a GPU learner sees as wrong values; a function mode tracks which
tensors come from which generator.

A run that cannot finish on meta (``.item()`` has no data there) tells nothing and is
ignored, unless the learner's code fails with a device mismatch the reference does not.
"""

import torch
from torch.overrides import TorchFunctionMode

from .compare import tensor_problems
from .context import Context
from .namespaces import SETUP, SOLUTION, YOUR_CODE, BoundedOutput, captured, new_namespace, run_code, seed_all

META = torch.device("meta")
PREFIX = "when DEVICE is a GPU (your code was run again with DEVICE set to the meta device, which stands in for one)"
# Properties a meta tensor still has; values are compared through the generators instead.
META_PROPERTIES = ("device", "requires_grad", "is_leaf")

_RANDOM = {
    "rand",
    "randn",
    "randint",
    "randperm",
    "rand_like",
    "randn_like",
    "randint_like",
    "normal",
    "bernoulli",
    "multinomial",
    "poisson",
    "normal_",
    "uniform_",
    "random_",
    "exponential_",
    "geometric_",
    "log_normal_",
    "cauchy_",
    "bernoulli_",
    "dropout",
}


def _tensors(value, depth: int = 0):
    if isinstance(value, torch.Tensor):
        yield value
    elif depth < 2 and isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item, depth + 1)
    elif depth < 2 and isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item, depth + 1)


class Generators(TorchFunctionMode):
    """Remembers, per tensor, which generators its numbers came from: 'cpu', 'device'."""

    def __init__(self):
        super().__init__()
        self.origin: dict = {}  # id(tensor) -> (tensor's weak reference, frozenset of origins)

    def of(self, t) -> frozenset:
        entry = self.origin.get(id(t))
        if entry is None or entry[0]() is not t:
            return frozenset()
        return entry[1]

    def _mark(self, t, origins: frozenset) -> None:
        import weakref

        try:
            self.origin[id(t)] = (weakref.ref(t), origins | self.of(t))
        except TypeError:
            pass

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = getattr(func, "__name__", "")
        inherited: frozenset = frozenset()
        for t in _tensors(list(args) + list(kwargs.values())):
            inherited |= self.of(t)
        if name in _RANDOM:
            made = [t for t in _tensors(out)] or [t for t in _tensors(args[:1])]
            for t in made:
                self._mark(t, inherited | {"device" if t.device.type == "meta" else "cpu"})
        elif inherited:
            for t in _tensors(out):
                self._mark(t, inherited)
            if name.endswith("_") and args and isinstance(args[0], torch.Tensor):
                self._mark(args[0], inherited)  # in place: the tensor itself now holds them
        return out


def _as_gpu(sentence: str) -> str:
    """Say DEVICE where the meta device stood in for it."""
    return sentence.replace("expected meta", "expected DEVICE").replace("is on meta", "is on DEVICE")


# What torch says when tensors on two devices meet (on a GPU: cuda:0 and cpu). Other errors
# on meta (.item(), .numpy(), copying out: no data there) say nothing about devices.
_MISMATCH = ("is not on the expected device", "expected all tensors to be on the same device", "at least two devices")


def _device_error(error) -> bool:
    text = f"{error.ename}: {error.evalue}".lower()
    return any(phrase in text for phrase in _MISMATCH)


def device_problems(payload: dict, results: list, checks: list, learner_run=None) -> list:
    """(index of a check, sentence) for each check the device run fails.

    ``learner_run()``, when given, runs setup and the learner's code on meta elsewhere (the
    learner's kernel, seen from the judge) and returns (error, namespace, origin of a tensor)."""
    setup, code, solution = payload.get("setup") or "", payload.get("code") or "", payload.get("solution") or ""
    seed = int(payload.get("seed") or 0)
    ref, learner = new_namespace(META), new_namespace(META)
    quiet = BoundedOutput(limit=0)
    tracker = Generators()
    with captured(quiet), tracker:
        seed_all(seed)
        if run_code(setup, ref, SETUP, "setup") or run_code(solution, ref, SOLUTION, "solution"):
            return []  # the reference itself needs real data: nothing to compare
    origin = tracker.of
    if learner_run is None:
        with captured(quiet), tracker:
            seed_all(seed)
            if run_code(setup, learner, SETUP, "setup"):
                return []
            error = run_code(code, learner, YOUR_CODE, "code")
    else:
        ran = learner_run()
        if ran is None:
            return []
        error, learner, learner_origin = ran

        def origin(t, _ref=tracker.of, _learner=learner_origin):
            return _ref(t) or _learner(t)

    if error is not None:
        if not _device_error(error):
            return []
        at = f" at line {error.line}" if error.line else ""
        return [(None, f"{PREFIX}, your code raises {error.ename}{at}: {error.evalue}")]
    ctx = Context(learner, ref, META, seed)
    found = []
    for index, check in enumerate(checks):
        if check.get("kind") != "tensor" or not results[index]["passed"]:
            continue
        try:
            with captured(quiet):
                actual = ctx.eval_learner(check["expr"])
                expected = ctx.eval_ref(check.get("expected") or check["expr"])
        except Exception:
            continue
        if not (isinstance(actual, torch.Tensor) and isinstance(expected, torch.Tensor)):
            continue
        name = ctx.display(check["expr"]) if hasattr(ctx, "display") else check["expr"]
        compare = check.get("compare") or ["shape", "dtype", "device", "values"]
        props = [p for p in META_PROPERTIES if p in compare or p == "device"]
        sentences = [_as_gpu(p.sentence) for p in tensor_problems(actual, expected, name, props)]
        if "values" in compare:
            mine, theirs = origin(actual), origin(expected)
            if "device" in theirs and "device" not in mine and "cpu" in mine:
                sentences.append(
                    f"{name} holds numbers drawn by the CPU's generator and then moved to DEVICE, while the "
                    "reference draws them on DEVICE: a GPU has its own generator, so the values differ there; "
                    "draw on the device directly (device=DEVICE)"
                )
            elif "cpu" in theirs and "device" in mine and "cpu" not in mine:
                sentences.append(
                    f"{name} holds numbers drawn by DEVICE's generator, while the reference draws them on the CPU "
                    "and moves them: a GPU's generator gives other numbers for the same seed"
                )
        if sentences:
            found.append((index, f"{PREFIX}: " + "; ".join(sentences)))
    return found
