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

Meta has no data, so what the setup's and the code's lines read out of tensors
(``.item()``, ``.tolist()``, ``bool(t)``) is answered with what the same reads returned in
the normal run (reads.py). A run that still cannot finish on meta tells nothing and is
ignored, unless the learner's code fails with a device mismatch the reference does not.
"""

import hashlib
import sys
from collections import OrderedDict
from typing import NamedTuple

import torch
from torch.overrides import TorchFunctionMode

from . import setupnames, wire
from .compare import tensor_problems
from .context import Context
from .namespaces import (
    SETUP,
    SOLUTION,
    YOUR_CODE,
    BoundedOutput,
    captured,
    new_namespace,
    run_code,
    run_reference_setup,
    seed_all,
)
from .reads import Reads, replayed

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


# Operations a GPU allows between a CUDA tensor and a CPU one: moves, copies, indexing
# (CPU indices), attribute reads. Every other operation on tensors of two devices raises
# there, while most meta kernels never look: the device run refuses them as a GPU would.
_CROSSING = frozenset(
    {
        "to",
        "cpu",
        "cuda",
        "copy_",
        "_parse_to",
        "__get__",
        "__set__",
        "__getitem__",
        "__setitem__",
        "index_put_",
        "index_put",
        "new_tensor",
        "numpy",
        "tolist",
        "item",
        "type",
        "set_",
        "data",
        "_has_compatible_shallow_copy_type",
        "__reduce_ex__",
        "__deepcopy__",
        "__repr__",
        "__format__",
        "__str__",
        "__len__",
        "__iter__",
        "size",
        "dim",
        "backward",
        "_make_subclass",
    }
)


def _devices(values) -> set:
    """The device types of the tensors in ``values``; a CPU scalar (0-d) rides along anywhere."""
    found = set()
    for t in _tensors(list(values)):
        if t.device.type == "cpu" and t.dim() == 0:
            continue
        found.add(t.device.type)
    return found


def refuse_mixed_devices(func, args, kwargs) -> None:
    """Raise what a GPU raises when an operation meets tensors on two devices."""
    name = getattr(func, "__name__", "")
    if name in _CROSSING:
        return
    devices = _devices(list(args) + list((kwargs or {}).values()))
    if "meta" in devices and len(devices) > 1:
        other = sorted(devices - {"meta"})[0]
        raise RuntimeError(
            f"Expected all tensors to be on the same device, but found at least two devices, meta and {other}!"
        )


def _copy_to_cpu(func, args, kwargs):
    """A meta tensor copied to the CPU: zeros of its shape and dtype there (meta has no data
    to copy), so code that copies to the host before ``.numpy()``, as a GPU needs, runs on."""
    name = getattr(func, "__name__", "")
    if name not in ("cpu", "to") or not args or not isinstance(args[0], torch.Tensor) or not args[0].is_meta:
        return None
    t = args[0]
    dtype = t.dtype
    if name == "to":
        try:
            device, to_dtype, _, _ = torch._C._nn._parse_to(*args[1:], **kwargs)
        except Exception:
            return None
        if device is None or torch.device(device).type != "cpu":
            return None
        dtype = to_dtype or dtype
    return torch.zeros(tuple(t.shape), dtype=dtype)


def _leaves(root: torch.Tensor) -> list:
    """The leaves that ``root.backward()`` would give a ``.grad``."""
    found, seen, todo = [], set(), [root.grad_fn]
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)
        if isinstance(variable, torch.Tensor):
            found.append(variable)
        todo += [child for child, _ in node.next_functions]
    return found


def _backward_with_host_leaves(func, args, kwargs):
    """``backward()`` from a meta tensor into CPU leaves, as a GPU runs it.

    On a GPU a CPU scalar (0-d) may meet a CUDA tensor, and backward() moves its gradient
    to the CPU leaf; the meta device cannot copy out, so autograd raises there. Here the meta
    leaves get their gradients from autograd and the CPU leaves one of their own device,
    so the run goes on and the checks can still see where each tensor lives. Returns None
    when the normal call does."""
    name = getattr(func, "__name__", "")
    if name != "backward" or not args or not isinstance(args[0], torch.Tensor) or not args[0].is_meta:
        return None
    root = args[0]
    leaves = [t for t in _leaves(root) if t.requires_grad]
    host = [t for t in leaves if not t.is_meta]
    if not host:
        return None
    params = dict(zip(("gradient", "retain_graph", "create_graph"), args[1:], strict=False), **(kwargs or {}))
    on_meta = [t for t in leaves if t.is_meta]
    if on_meta:
        torch.autograd.backward(
            root,
            grad_tensors=params.get("gradient"),
            retain_graph=params.get("retain_graph"),
            create_graph=bool(params.get("create_graph")),
            inputs=on_meta,
        )
    for t in host:
        if t.grad is None:
            t.grad = torch.zeros_like(t)
    return True


class SameDevice(TorchFunctionMode):
    """Operations on tensors of two devices raise, as on a GPU (see refuse_mixed_devices)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        refuse_mixed_devices(func, args, kwargs)
        if _backward_with_host_leaves(func, args, kwargs):
            return None
        return func(*args, **(kwargs or {}))


class Generators(TorchFunctionMode):
    """Remembers, per tensor, which generators its numbers came from: 'cpu', 'device'.
    Operations on tensors of two devices raise, as on a GPU (see refuse_mixed_devices)."""

    def __init__(self, reads: Reads | None = None):
        super().__init__()
        self.origin: dict = {}  # id(tensor) -> (tensor's weak reference, frozenset of origins)
        self.reads = reads  # the normal run's reads, answered again where meta has no data

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
        hit, value = replayed(self.reads, func, args, kwargs, sys._getframe(1))
        if hit:
            return value
        refuse_mixed_devices(func, args, kwargs)
        copied = _copy_to_cpu(func, args, kwargs)
        if copied is not None:
            return copied
        if _backward_with_host_leaves(func, args, kwargs):
            return None
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


# Errors that come from the meta device having no data (a GPU has data: they say nothing
# about devices there).
_NO_DATA = (
    "cannot copy out of meta tensor",
    "no data",
    "doesn't have storage",
    "does not have storage",
    "cannot be called on meta tensors",
    "on meta tensors",
    "data-dependent",
    "cannot access data pointer",
    # torch 2.2's words for .item() and for an operator with no meta kernel
    "_local_scalar_dense",
    "attempted to run this operator with meta tensors",
)
_DEVICE_NAMES = ("cpu", "cuda", "meta", "mps")


def no_data_error(ename: str, evalue: str) -> bool:
    """Whether an error is the meta device's missing data (``.item()``, copying out)."""
    text = f"{ename}: {evalue}".lower()
    return any(phrase in text for phrase in _NO_DATA)


class _MetaReference(NamedTuple):
    namespace: dict  # setup, judge setup and solution, run on meta
    origins: dict  # Generators.origin once they ran and the expected values were computed
    expected: dict | None  # check index -> the expected value on meta; None: the reference needs data


_UNKNOWN = object()
# The reference's device run, kept per exercise: a judge that serves every learner of a class
# runs it once (it depends on the exercise alone; meta runs are slow: torch's Python kernels).
_REFERENCES: OrderedDict[str, _MetaReference] = OrderedDict()
_KEPT_REFERENCES = 8


def _meta_reference(payload: dict, checks: list, reads: Reads | None) -> _MetaReference:
    """The reference's device run for ``payload`` and the tensor checks' expected values there,
    kept for the next learner of the same exercise (``reads``: what the reference's normal run
    read, part of the key, though the same exercise reads the same)."""
    key = hashlib.sha256(
        repr(
            (
                [payload.get(k) for k in ("setup", "judge_setup", "solution", "seed")],
                [(c.get("kind"), c.get("expected"), c.get("expr")) for c in checks],
                list(reads.entries) if reads is not None else None,
                reads.full if reads is not None else None,
            )
        ).encode()
    ).hexdigest()
    kept = _REFERENCES.get(key)
    if kept is not None:
        _REFERENCES.move_to_end(key)
        return kept
    ref, quiet = new_namespace(META), BoundedOutput(limit=0)
    replay = Reads()
    if reads is not None:
        replay.entries, replay.full = type(reads.entries)(reads.entries), reads.full  # taken from a copy
    tracker = Generators(replay)
    expected: dict | None = {}
    with captured(quiet), tracker:
        seed_all(int(payload.get("seed") or 0))
        keep = setupnames.of_payload(payload)
        if run_reference_setup(payload.get("setup") or "", ref, payload.get("judge_setup") or "", keep) or run_code(
            payload.get("solution") or "", ref, SOLUTION, "solution"
        ):
            expected = None
    tracker.reads = None  # the checks' own expressions read nothing recorded
    if expected is not None:
        ctx = Context(new_namespace(META), ref, META, int(payload.get("seed") or 0))
        for index, check in enumerate(checks):
            if check.get("kind") != "tensor":
                continue
            try:
                with captured(quiet), tracker:
                    expected[index] = ctx.eval_ref(check.get("expected") or check["expr"])
            except Exception:
                pass  # the check needs data the meta device does not have
    kept = _MetaReference(ref, dict(tracker.origin), expected)
    _REFERENCES[key] = kept
    while len(_REFERENCES) > _KEPT_REFERENCES:
        _REFERENCES.popitem(last=False)
    return kept


def device_error(ename: str, evalue: str) -> bool:
    """Whether an error is about devices (as a GPU would raise it), not about meta's missing data."""
    import re

    text = f"{ename}: {evalue}".lower()
    if any(phrase in text for phrase in _NO_DATA):
        return False
    named = {d for d in _DEVICE_NAMES if re.search(rf"\b{d}\b", text)}
    return bool(named) and ("device" in text or len(named) > 1)


def _device_error(error) -> bool:
    return device_error(error.ename, error.evalue)


def as_gpu_error(text: str) -> str:
    """An error raised on meta as a GPU learner reads it: the meta device is cuda:0 there."""
    import re

    return re.sub(r"\bmeta\b", "cuda:0", text)


def device_problems(payload: dict, results: list, checks: list, learner_run=None, reads: dict | None = None) -> list:
    """(index of a check, sentence) for each check the device run fails.

    ``learner_run()``, when given, runs setup and the learner's code on meta elsewhere (the
    learner's kernel, seen from the judge) and returns (error, namespace, origin of a tensor).
    ``reads``: the normal runs' reads ("ref", "learner"), answered again on meta."""
    setup, code = payload.get("setup") or "", payload.get("code") or ""
    seed = int(payload.get("seed") or 0)
    quiet = BoundedOutput(limit=0)
    reads = reads or {}
    reference = _meta_reference(payload, checks, reads.get("ref"))
    if reference.expected is None:
        return []  # the reference itself needs real data: nothing to compare
    learner = new_namespace(META)
    tracker = Generators()
    tracker.origin = dict(reference.origins)  # this verification's marks stay out of the kept reference's
    origin = tracker.of
    if learner_run is None:
        tracker.reads = reads.get("learner")
        with captured(quiet), tracker:
            seed_all(seed)
            if run_code(setup, learner, SETUP, "setup"):
                return []
            bound = setupnames.kept(learner, setupnames.of_payload(payload))
            error = run_code(code, learner, YOUR_CODE, "code")
            if bound:
                learner[setupnames.SETUP_KEY] = bound
    else:
        ran = learner_run()
        if ran is None:
            return []
        error, learner, learner_origin = ran

        def origin(t, _ref=tracker.of, _learner=learner_origin):
            return _ref(t) or _learner(t)

    tracker.reads = None  # the checks' own expressions read nothing recorded
    if error is not None:
        if not _device_error(error):
            return []
        at = f" at line {error.line}" if error.line else ""
        return [(None, f"{PREFIX}, your code raises {error.ename}{at}: {as_gpu_error(error.evalue)}")]
    ctx = Context(learner, reference.namespace, META, seed)
    found = []
    for index, check in enumerate(checks):
        if check.get("kind") != "tensor" or not results[index]["passed"]:
            continue
        expected = reference.expected.get(index, _UNKNOWN)
        if expected is _UNKNOWN:
            continue  # the check needs data the meta device does not have
        try:
            with captured(quiet), tracker:
                actual = ctx.eval_learner(check["expr"])
        except Exception as exc:
            # The check's own expression raised on the learner's values only: a device error
            # there is one a GPU learner meets; anything else is meta's missing data.
            ename = exc.ename if isinstance(exc, wire.Raised) else type(exc).__name__
            if device_error(ename, str(exc)):
                name = ctx.display(check["expr"]) if hasattr(ctx, "display") else check["expr"]
                found.append((index, f"{PREFIX}: {name} raises {ename}: {as_gpu_error(str(exc))}"))
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
