"""What crosses between a learner's kernel and the judge: data, never code.

The one contract for everything the learner's kernel sends (values of its names, results of
calls the judge makes into its code, protocol traces, errors) and the judge sends back
(inputs it chose). Version ``WIRE_VERSION``; the judge validates every message.

Encoding: values are *prepared* into plain structures of tensors, numbers, strings, bytes,
containers and tagged records (dicts with a ``"~"`` key naming the record kind), then written
as a frame (``_Frame``: the structure as JSON, the tensors' storages as raw bytes, so views
keep sharing their base's storage, with shape, strides, offset, dtype and device intact), as
JSON where the message holds only numbers, strings and containers, or as one ``torch.save``
in base64 where its tensors are ones a frame does not carry (``encode``). Decoding runs no
code: ``json.loads``, storages filled with their bytes and tensors set over them once their
layouts are checked, or ``torch.load(weights_only=True)``, which refuses every class that is
not plain data (Tensor subclasses, float subclasses, a learner's own classes); then a walk
that accepts only the types below and rebuilds records:

- ``tensor``: ``data`` (a detached alias of the tensor) and its autograd facts (requires_grad,
  is_leaf, grad_fn's class name, .grad, _version), which ``torch.save`` alone would lose, and
  ``ref``, the handle the judge sends back to mean the learner's own tensor;
- ``ndarray``: a NumPy array as a tensor over the same memory (sharing with tensors made by
  ``torch.from_numpy`` survives) and its dtype; ``npscalar``: a NumPy scalar;
- ``module``: an ``nn.Module``'s structure (class name, training flag, parameters, buffers,
  submodules, plain attributes) read from its own dictionaries, plus a handle;
- ``handle``: anything else (a function, a class, an optimizer, a generator): the judge gets a
  proxy whose calls it sends back to the learner's kernel (judge.py);
- ``module-name``: an imported module, which the judge replaces by its own import;
- ``opaque``: a value that is not data (a subclass of a number, a tensor subclass): its class
  and a short description, never the object;
- ``raised``: an exception, as its class names, message and line.

Standard library, torch and numpy only: both sides import this module.
"""

import base64
import io
import json
import math
from collections import OrderedDict as _OrderedDict
from typing import Any

import numpy as np
import torch

WIRE_VERSION = 1
_GRAD: Any = torch.Tensor.grad  # the descriptor itself: a tensor's own `grad` attribute cannot answer for it
TAG = "~"
# What a sender sends of one message: deeper values, and containers past the item budget,
# go as opaque records. Readers allow the envelope around a value (an answer, its names, a
# call's results: a few levels) and the opaque records a spent budget leaves (at most as
# many again), so whatever a sender prepared is read back.
MAX_DEPTH = 24
MAX_ITEMS = 200_000
_READ_DEPTH = MAX_DEPTH + 8
_READ_ITEMS = 2 * MAX_ITEMS + 1_000
MAX_BYTES = 512 * 1024 * 1024  # of one message (base64 text), both ways

# Modules the judge imports itself when the learner's namespace holds them: a check's
# ``torch.`` means torch, whatever the learner bound to that name.
JUDGE_MODULES = ("torch", "numpy", "math", "io", "collections", "itertools", "functools", "operator", "statistics")


class Record(dict):
    """A tagged record the sender builds itself (an exception as data): sent as it is."""


class WireError(Exception):
    """A message that is not valid data: it decides nothing and says why."""


# ------------------------------------------------------------------ prepare (the sender)


class Preparer:
    """Turns values into wire structures. ``handles`` (learner side) keeps the objects the
    judge may call back; the judge side sends data and handles it was given, nothing else."""

    def __init__(self, handles: dict | None = None, modules_as_records: bool = True, origins=None):
        self.handles = handles if handles is not None else {}
        self.origins = origins  # tensor -> frozenset of generators its numbers came from (device run)
        self.modules_as_records = modules_as_records
        self.items = 0
        self._memo: dict = {}
        self._open: set = set()  # ids of the containers being prepared (a cycle comes back to one)
        self._storages: list = []  # (first byte, size, storage) of the tensors sent so far

    def handle(self, obj, kind: str) -> dict:
        key = id(obj)
        self.handles[key] = obj
        record = {TAG: "handle", "id": key, "kind": kind, "type": _type_name(obj)}
        name = _safe(lambda: getattr(obj, "__name__", None))
        if isinstance(name, str):
            record["name"] = name[:200]
        if callable(obj):
            record["params"] = _parameters(obj)
        if isinstance(obj, type):
            record["is_class"] = True
            record["module_class"] = issubclass(obj, torch.nn.Module)
        return record

    def __call__(self, value, depth: int = 0):
        self.items += 1
        if self.items > MAX_ITEMS or depth > MAX_DEPTH:
            return {TAG: "opaque", "type": _type_name(value), "why": "too large or too deeply nested to send"}
        kind = type(value)
        if value is None or kind in (bool, int, float, str):
            return value
        if kind is torch.Size:
            return value
        if kind is Prepared:
            return value.body
        # Records, not the objects: torch.load(weights_only=True) of older torch releases
        # (2.2) refuses complex numbers, devices, some dtypes (bfloat16) and protocol-2 bytes.
        if kind is torch.dtype:
            return {TAG: "dtype", "name": str(value).removeprefix("torch.")}
        if kind is complex:
            return {TAG: "complex", "re": value.real, "im": value.imag}
        if kind is torch.device:
            return {TAG: "device", "type": value.type, "index": value.index}
        if kind is bytes:
            data = torch.frombuffer(bytearray(value), dtype=torch.uint8) if value else torch.zeros(0, dtype=torch.uint8)
            return {TAG: "bytes", "data": data}
        if kind is torch.Tensor or kind is torch.nn.Parameter:
            return self._tensor(value, depth)
        if kind is Record:
            return {str(k): self(v, depth + 1) for k, v in value.items()}
        if isinstance(value, torch.Tensor):
            return {TAG: "opaque", "type": _type_name(value), "why": "a subclass of torch.Tensor"}
        if kind is np.ndarray:
            return self._array(value)
        if isinstance(value, np.generic) and kind.__module__ == "numpy":
            return {TAG: "npscalar", "dtype": str(value.dtype), "value": self(value.item(), depth + 1)}
        if kind in (list, tuple, set, frozenset, dict, _OrderedDict):
            return self._container(value, kind, depth)
        if kind is range:
            return {TAG: "range", "args": [value.start, value.stop, value.step]}
        if kind is slice:
            return {TAG: "slice", "args": [self(value.start), self(value.stop), self(value.step)]}
        if isinstance(value, torch.nn.Module):
            if self.modules_as_records:
                return self._module(value, depth)
            return self.handle(value, "module")
        if kind is type(math):
            return {TAG: "module-name", "name": str(value.__name__)}
        if isinstance(value, (bool, int, float, complex, str, bytes, list, tuple, dict, set)):
            overridden = _overrides(value)
            if overridden:
                why = f"a subclass of {_base(value)} that overrides {', '.join(overridden[:3])}"
                return {TAG: "opaque", "type": _type_name(value), "why": why}
            return self(_as_base(value), depth)  # a named tuple, an IntEnum: its plain value
        if isinstance(value, BaseException):
            return raised(value)
        return self.handle(value, "callable" if callable(value) else "object")

    def _container(self, value, kind, depth: int):
        # A container inside itself (``g = globals()``, a list appended to itself) and one
        # larger than what is left of the message's budget go as one opaque record each:
        # the rest of the answer still crosses, and a check that reads them says why not.
        if id(value) in self._open:
            return {TAG: "opaque", "type": _type_name(value), "why": "a container that holds itself"}
        if self.items + len(value) > MAX_ITEMS:
            return {TAG: "opaque", "type": _type_name(value), "why": "too large to send"}
        self._open.add(id(value))
        try:
            if kind is dict or kind is _OrderedDict:
                return {TAG: "dict", "items": [[self(k, depth + 1), self(v, depth + 1)] for k, v in value.items()]}
            items = [self(v, depth + 1) for v in value]
            return items if kind is list else {TAG: kind.__name__, "items": items}
        finally:
            self._open.discard(id(value))

    def _tensor(self, t, depth: int) -> dict:
        key = ("t", id(t))
        if key in self._memo:
            return self._memo[key]
        grad = _safe(lambda: _GRAD.__get__(t)) if t.is_leaf or _safe(lambda: t.retains_grad) else None
        if t.device.type == "cpu":
            storage = _safe(t.untyped_storage)
            if storage is not None and storage.nbytes():
                self._storages.append((storage.data_ptr(), storage.nbytes(), storage))
        record = {
            TAG: "tensor",
            "data": t.detach(),
            "param": type(t) is torch.nn.Parameter,
            "requires_grad": bool(t.requires_grad),
            "is_leaf": bool(t.is_leaf),
            "grad_fn": None if t.grad_fn is None else type(t.grad_fn).__name__,
            "graph": graph_ops(t),
            "backpropagated": backpropagated(t),
            "grad": self._tensor(grad, depth + 1) if type(grad) is torch.Tensor else None,
            "version": version_counter(t),  # None for an inference tensor (it keeps none)
            "retains_grad": bool(_safe(lambda: t.retains_grad) or False),
            "inference": bool(_safe(t.is_inference) or False),
            "ptr": _storage_ptr(t),
            # The judge names this tensor by it when it passes it back (a helper asked whether
            # best_state shares memory with the model must see the learner's own tensors).
            "ref": self._ref(t),
        }
        if t.is_meta:
            # Its layout, not the tensor: torch.save passes a meta tensor's dtype as an object,
            # which old weights-only unpicklers refuse for some dtypes (bfloat16 on torch 2.2).
            record["data"] = None
            record["meta"] = {
                "shape": list(t.shape),
                "stride": list(t.stride()),
                "offset": t.storage_offset(),
                "dtype": self(t.dtype, depth + 1),
            }
        origin = self.origins(t) if self.origins is not None else None
        if origin:  # none is as no record of it: names read again cross as "same" as before the device run
            record["origin"] = sorted(origin)
        self._memo[key] = record
        return record

    def _ref(self, t) -> int:
        self.handles[id(t)] = t
        return id(t)

    def _array(self, arr) -> dict:
        data = self._over_storage(arr)
        if data is not None:
            return {TAG: "ndarray", "data": data, "dtype": str(arr.dtype), "writeable": bool(arr.flags.writeable)}
        try:
            data = torch.from_numpy(arr)
        except (TypeError, ValueError, RuntimeError):
            # object arrays, negative strides, dtypes torch lacks: the values in a plain copy
            try:
                data = torch.from_numpy(np.ascontiguousarray(arr))
            except (TypeError, ValueError, RuntimeError):
                return {TAG: "opaque", "type": "numpy.ndarray", "why": f"an array of dtype {arr.dtype}"}
        return {TAG: "ndarray", "data": data, "dtype": str(arr.dtype), "writeable": bool(arr.flags.writeable)}

    def _over_storage(self, arr):
        """The array as a tensor over the storage of a tensor already sent that holds its
        memory (torch.from_numpy made one of them from the other): one storage in the
        message, so the judge sees them share memory."""
        if not self._storages or arr.size == 0:
            return None
        try:
            start, nbytes = arr.__array_interface__["data"][0], arr.nbytes
            dtype = torch.from_numpy(arr[:0]).dtype if arr.ndim else torch.from_numpy(arr.reshape(1)[:0]).dtype
            item = arr.itemsize
        except Exception:
            return None
        for first, size, storage in self._storages:
            if first <= start and start + nbytes <= first + size and (start - first) % item == 0:
                if any(st % item or st < 0 for st in arr.strides):
                    return None
                view = torch.empty(0, dtype=dtype)
                view.set_(storage, (start - first) // item, arr.shape, tuple(st // item for st in arr.strides))
                return view
        return None

    def _module(self, module, depth: int) -> dict:
        key = ("m", id(module))
        if key in self._memo:
            return self._memo[key]
        record: dict = {TAG: "module", "handle": self.handle(module, "module")}
        self._memo[key] = record
        own = _safe(lambda: object.__getattribute__(module, "__dict__")) or {}
        params = own.get("_parameters") or {}
        buffers = own.get("_buffers") or {}
        children = own.get("_modules") or {}
        record.update(
            cls=_type_name(module),
            base=_torch_base(module),
            training=bool(own.get("training", True)),
            params={str(k): (self(v, depth + 1) if isinstance(v, torch.Tensor) else None) for k, v in params.items()},
            buffers={str(k): (self(v, depth + 1) if isinstance(v, torch.Tensor) else None) for k, v in buffers.items()},
            persistent=[str(k) for k in buffers if k not in (own.get("_non_persistent_buffers_set") or ())],
            children={
                str(k): (self(v, depth + 1) if isinstance(v, torch.nn.Module) else None) for k, v in children.items()
            },
            hooks={
                "forward": len(own.get("_forward_hooks") or {}),
                "forward_pre": len(own.get("_forward_pre_hooks") or {}),
                "backward": len(own.get("_backward_hooks") or {}),
            },
            attrs={
                str(k): self(v, depth + 1)
                for k, v in own.items()
                if not str(k).startswith("_") and k != "training" and _is_data(v)
            },
        )
        return record


def _torch_base(module) -> str:
    """The first torch class the module's class derives from ('torch.nn.modules.linear.Linear')."""
    for cls in type(module).__mro__:
        name = getattr(cls, "__module__", "") or ""
        if name.startswith("torch."):
            return f"{name}.{cls.__qualname__}"
    return "torch.nn.modules.module.Module"


# What comparing, measuring or converting a value asks of it.
_ASKED = frozenset(
    {
        "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__", "__len__", "__iter__",
        "__getitem__", "__contains__", "__bool__", "__float__", "__int__", "__index__", "__complex__",
        "__abs__", "__sub__", "__rsub__", "__add__", "__radd__", "__mul__", "__rmul__", "__truediv__",
        "__round__", "__array__", "item", "tolist", "keys", "values", "items",
    }
)  # fmt: skip
_BASES: tuple[Any, ...] = (bool, int, float, complex, str, bytes, list, tuple, dict, set)


def _overrides(value) -> list:
    found: set = set()
    for klass in type(value).__mro__:
        if klass in _BASES or klass is object:
            break
        if klass.__module__ == "collections" and klass.__name__ == "OrderedDict":
            break
        found |= _ASKED & set(vars(klass))
    return sorted(found)


def _as_base(value: Any) -> Any:
    for base in _BASES:
        if isinstance(value, base):
            if base in (list, tuple, set):
                return base(base.__iter__(value))
            if base is dict:
                return dict(dict.items(value))
            return base(value)
    return value


def _is_data(value) -> bool:
    kind = type(value)
    return (
        value is None
        or kind in (bool, int, float, complex, str, torch.dtype, torch.device, torch.Size, np.ndarray)
        or kind is torch.Tensor
        or (kind in (list, tuple, dict) and len(value) < 10_000)
    )


def _safe(fn):
    try:
        return fn()
    except Exception:
        return None


def _type_name(value) -> str:
    cls = type(value)
    module = getattr(cls, "__module__", "") or ""
    name = getattr(cls, "__qualname__", cls.__name__)
    return name if module in ("builtins", "__main__", "") else f"{module}.{name}"


def _base(value) -> str:
    for base in (bool, int, float, complex, str, bytes, list, tuple, dict, set):
        if isinstance(value, base):
            return base.__name__
    return "object"


# A module of torch's own classes (whose methods the tamper guard watches) is called as
# Module.__call__ is: (*args, **kwargs). Read once per class: a module's structure crosses
# again after every call of the learner's code, each layer a callable.
_TORCH_MODULE_PARAMS: dict = {}


def _parameters(fn) -> list:
    kind = type(fn)
    if isinstance(fn, torch.nn.Module) and kind.__module__.startswith("torch.nn.") and "__signature__" not in vars(fn):
        if kind not in _TORCH_MODULE_PARAMS:
            _TORCH_MODULE_PARAMS[kind] = _signature_parameters(fn)
        return [list(p) for p in _TORCH_MODULE_PARAMS[kind]]
    return _signature_parameters(fn)


def _signature_parameters(fn) -> list:
    import inspect

    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return []
    return [
        [p.name, p.kind.name, p.default is not p.empty]
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL, p.KEYWORD_ONLY, p.VAR_KEYWORD)
    ]


def _storage_ptr(t) -> int | None:
    try:
        return int(t.untyped_storage().data_ptr()) if t.device.type != "meta" else None
    except Exception:
        return None


def raised(exc: BaseException, filename: str = "<your code>", where: str = "") -> dict:
    """An exception as data: class names along its MRO, message, the line of ``filename``."""
    import traceback

    try:
        text = str(exc)
    except Exception:
        text = "(its message could not be shown)"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
    return Record(
        {
            TAG: "raised",
            "names": [c.__name__ for c in type(exc).__mro__][:12],
            "qualnames": [f"{c.__module__}.{c.__qualname__}" for c in type(exc).__mro__][:12],
            "message": text[:4000],
            "line": frames[-1].lineno if frames else None,
            "name": str(getattr(exc, "name", "") or "") if isinstance(exc, (NameError, AttributeError)) else "",
            "obj": _attr_owner(exc),
            "where": where,
            "traceback": _traceback(exc, filename),
            "context": _context(exc, filename),
        }
    )


_CONTEXT_KEYS = ("line", "source", "tensors", "buffers")


def _context(exc, filename: str):
    """errorcause.context as a list (a record's values travel as plain lists and strings)."""
    try:
        from .errorcause import context

        found = context(exc, filename)
        return None if found is None else [found[k] for k in _CONTEXT_KEYS]
    except Exception:
        return None


def _traceback(exc, filename: str) -> list:
    try:
        from .namespaces import filtered_traceback

        return filtered_traceback(exc, filename)[-60:]
    except Exception:
        return []


def _attr_owner(exc) -> str:
    if not isinstance(exc, AttributeError):
        return ""
    obj = getattr(exc, "obj", None)
    if obj is None:
        return "none"
    if isinstance(obj, type) and issubclass(obj, torch.nn.Module):
        return f"module-class:{obj.__name__}"
    return ""


class Prepared:
    """A body a Preparer made already (see ``frozen``): sent as it is, inside a message."""

    __slots__ = ("body",)

    def __init__(self, body):
        self.body = body


def frozen(body):
    """The prepared ``body`` over copies of the memory its tensors hold now: what a later
    call writes there does not reach it, and its tensors that share a storage still share
    one (a copy per storage). Several of them then cross in one message, one load."""
    copies: dict = {}

    def copy(t):
        if t.is_meta or t.layout != torch.strided or t.is_conj() or t.is_neg():
            return t.clone()  # no storage to copy, or bits a bare storage would lose
        storage = t.untyped_storage()
        key = (str(t.device), storage.data_ptr(), storage.nbytes())
        if key not in copies:
            copies[key] = storage.clone()
        return torch.empty(0, dtype=t.dtype, device=t.device).set_(
            copies[key], t.storage_offset(), t.size(), t.stride()
        )

    def walk(value):
        kind = type(value)
        if kind is torch.Tensor:
            return copy(value)
        if kind is dict:
            return {key: walk(item) for key, item in value.items()}
        if kind is list:
            return [walk(item) for item in value]
        return value

    return walk(body)


def same_body(kept, body) -> bool:
    """Whether prepared ``body`` would cross exactly as ``kept`` (a ``frozen`` one) did: the
    same records, the same numbers bit for bit, tensors of the same layout over storages of
    the same bytes. Anything it cannot tell counts as changed."""
    kind = type(kept)
    if kind is not type(body):
        return False
    if kind is dict:
        return kept.keys() == body.keys() and all(same_body(kept[key], body[key]) for key in kept)
    if kind is list:
        return len(kept) == len(body) and all(same_body(a, b) for a, b in zip(kept, body, strict=True))
    if kind is torch.Tensor:
        return _same_tensor(kept, body)
    if kind is float:
        return kept.hex() == body.hex()  # -0.0 is not 0.0, a NaN is itself
    if kind in (str, int, bool, torch.Size) or kept is None:
        return kept == body
    return False


def _same_tensor(a, b) -> bool:
    strided = a.layout == b.layout == torch.strided and not a.is_meta and not b.is_meta
    if not strided or (a.dtype, a.device, a.shape) != (b.dtype, b.device, b.shape):
        return False
    if (a.stride(), a.storage_offset(), a.is_conj(), a.is_neg()) != (
        b.stride(),
        b.storage_offset(),
        b.is_conj(),
        b.is_neg(),
    ):
        return False
    sa, sb = a.untyped_storage(), b.untyped_storage()
    if sa.nbytes() != sb.nbytes():
        return False
    raw = [torch.empty(0, dtype=torch.uint8, device=a.device).set_(s) for s in (sa, sb)]
    # Eight bytes at a time, then the rest: torch.equal over bytes one by one is several
    # times slower, and the learner's kernel compares its names after every call.
    wide = sa.nbytes() - sa.nbytes() % 8
    if wide and not torch.equal(raw[0][:wide].view(torch.int64), raw[1][:wide].view(torch.int64)):
        return False
    return bool(torch.equal(raw[0][wide:], raw[1][wide:]))


def encode(value, preparer: Preparer | None = None) -> str:
    """The prepared ``value`` as text: JSON where it holds only what JSON keeps exactly
    (``_plain``: most requests and many answers); a frame (``_Frame``: JSON for the
    structure, the tensors' storages as raw bytes) where its tensors are plain CPU or meta
    tensors; else base64 of one ``torch.save`` (tensors that need grad, a GPU's, quantized,
    sparse). An archive of a small request is ~1.8 kB and takes ~0.4 ms to write and as
    long to load; weights-only loading walks it in Python, several ms for a function
    check's cases."""
    message = {"v": WIRE_VERSION, "body": (preparer or Preparer())(value)}
    if _plain(message["body"]):
        return json.dumps(message, separators=(",", ":"), allow_nan=False)
    framed = _Frame().encode(message)
    return framed if framed is not None else archive(message)


def archive(message: dict) -> str:
    """Base64 of one ``torch.save`` of a message (already prepared)."""
    buffer = io.BytesIO()
    torch.save(message, buffer)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


FRAME_MARK = "@"  # the first character of a frame: never the start of JSON or of base64 text
_ESCAPE = "\x00"  # keys of the frame's tagged records; a dict with such a key of its own is escaped
_FRAME_DEVICES = ("cpu", "meta")


class _NotFramed(Exception):
    """A value the frame does not carry: the message goes as one torch.save instead."""


class _Frame:
    """``@`` + JSON of the structure + ``|`` + base64 of the storages' bytes, one after another.

    The structure is JSON with tagged records for what JSON lacks: ``{"\\x00t": [storage,
    dtype, device, shape, stride, offset]}`` a tensor (storage -1 on the meta device),
    ``{"\\x00u": [...]}`` a tuple, ``{"\\x00s": [...]}`` a torch.Size, ``{"\\x00d": [[k, v],
    ...]}`` a dict whose keys JSON cannot hold, ``{"\\x00r": n}`` the n-th dict or list again
    (the same object twice stays one object, as pickle keeps it). Tensors over one storage
    share it on arrival. Reading it builds tensors with ``set_`` over storages it allocates
    and fills, after checking every layout against its storage: no code runs, nothing is
    read out of bounds."""

    def __init__(self):
        self.storages: dict = {}  # (data_ptr, nbytes) -> index
        self.chunks: list = []
        self.seen: dict = {}  # id(container) -> its number, in the order the reader meets them

    def encode(self, message) -> str | None:
        try:
            structure = self.walk(message)
        except _NotFramed:
            return None
        head = json.dumps([structure, [len(c) for c in self.chunks]], separators=(",", ":"), allow_nan=True)
        return FRAME_MARK + head + "|" + base64.b64encode(b"".join(self.chunks)).decode("ascii")

    def walk(self, value):
        kind = type(value)
        if value is None or kind is bool or kind is int or kind is float or kind is str:
            return value
        if kind is list or kind is dict:
            number = self.seen.get(id(value))
            if number is not None:
                return {_ESCAPE + "r": number}
            self.seen[id(value)] = len(self.seen)
            if kind is list:
                return [self.walk(v) for v in value]
            if all(type(k) is str and not k.startswith(_ESCAPE) for k in value):
                return {k: self.walk(v) for k, v in value.items()}
            return {_ESCAPE + "d": [[self.walk(k), self.walk(v)] for k, v in value.items()]}
        if kind is tuple:
            return {_ESCAPE + "u": [self.walk(v) for v in value]}
        if kind is torch.Size:
            return {_ESCAPE + "s": list(value)}
        if kind is torch.Tensor:
            return {_ESCAPE + "t": self.tensor(value)}
        raise _NotFramed

    def tensor(self, t) -> list:
        device = t.device.type
        if (
            device not in _FRAME_DEVICES
            or t.requires_grad
            or t.layout != torch.strided
            or t.is_quantized
            or t.is_conj()
            or t.is_neg()
            or _safe(t.is_inference)
        ):
            raise _NotFramed
        layout = [str(t.dtype).removeprefix("torch."), device, list(t.shape), list(t.stride()), t.storage_offset()]
        if device == "meta":
            return [-1, *layout]
        storage = t.untyped_storage()
        key = (storage.data_ptr(), storage.nbytes())
        index = self.storages.get(key) if key[1] else None
        if index is None:
            index = len(self.chunks)
            if key[1]:
                self.storages[key] = index
            raw = torch.empty(0, dtype=torch.uint8).set_(storage)
            self.chunks.append(raw.numpy().tobytes())
        return [index, *layout]


def _read_frame(text: str):
    head, bar, data = text[1:].rpartition("|")
    if not bar:
        raise WireError("a frame without its data")
    try:
        structure, sizes = json.loads(head)
        raw = base64.b64decode(data.encode("ascii"), validate=True)
    except (ValueError, TypeError, RecursionError, UnicodeEncodeError):
        raise WireError("a frame that is not data") from None
    if (
        type(sizes) is not list
        or len(sizes) > MAX_ITEMS
        or not all(type(n) is int and n >= 0 for n in sizes)
        or sum(sizes) != len(raw)
    ):
        raise WireError("a frame whose storages do not add up")
    storages, start = [], 0
    for size in sizes:
        buffer = torch.empty(size, dtype=torch.uint8)
        if size:
            buffer.numpy()[:] = np.frombuffer(raw, dtype=np.uint8, count=size, offset=start)
        storages.append(buffer.untyped_storage())
        start += size
    return _FrameReader(storages).read(structure, 0)


# A value's record nests a few levels of its own (items, pairs, a tensor's fields), and
# holds a dozen or so entries per value (a tensor's record about twenty).
_FRAME_DEPTH = 4 * _READ_DEPTH + 16
_FRAME_ITEMS = 32 * _READ_ITEMS


class _FrameReader:
    def __init__(self, storages: list):
        self.storages = storages
        self.containers: list = []
        self.items = 0

    def read(self, value, depth: int):
        self.items += 1
        if self.items > _FRAME_ITEMS or depth > _FRAME_DEPTH:
            raise WireError("a value nested too deeply or with too many items")
        kind = type(value)
        if value is None or kind is bool or kind is int or kind is float or kind is str:
            return value
        if kind is list:
            out: list = []
            self.containers.append(out)
            out.extend(self.read(v, depth + 1) for v in value)
            return out
        if kind is not dict:
            raise WireError("a frame that is not data")
        if len(value) == 1:
            ((key, item),) = value.items()
            if key.startswith(_ESCAPE):
                return self.tagged(key[len(_ESCAPE) :], item, depth)
        out_dict: dict = {}
        self.containers.append(out_dict)
        for key, item in value.items():
            if key.startswith(_ESCAPE):
                raise WireError("a frame with a record inside a mapping")
            out_dict[key] = self.read(item, depth + 1)
        return out_dict

    def tagged(self, tag: str, item, depth: int):
        if tag == "r":
            if type(item) is not int or not 0 <= item < len(self.containers):
                raise WireError("a frame that refers to a value it never sent")
            return self.containers[item]
        if type(item) is not list:
            raise WireError("a frame record that is not a list")
        if tag == "u":
            return tuple(self.read(v, depth + 1) for v in item)
        if tag == "s":
            return torch.Size(_sizes(item))
        if tag == "d":
            pairs: dict = {}
            self.containers.append(pairs)
            for pair in item:
                if type(pair) is not list or len(pair) != 2:
                    raise WireError("a dictionary entry that is not a pair")
                key = self.read(pair[0], depth + 1)
                try:
                    pairs[key] = self.read(pair[1], depth + 1)
                except TypeError:  # a list or dict as a key
                    raise WireError("a dictionary key that is not hashable") from None
            return pairs
        if tag == "t":
            return self.tensor(item)
        raise WireError(f"a frame record of unknown kind {tag!r}")

    def tensor(self, item: list):
        if len(item) != 6:
            raise WireError("a tensor whose layout is not shapes and strides")
        index, name, device, shape, stride, offset = item
        dtype = getattr(torch, name, None) if type(name) is str else None
        itemsize = _itemsize(dtype) if type(dtype) is torch.dtype else None
        if itemsize is None:
            raise WireError("a tensor of a dtype the frame does not carry")
        shape, stride = _sizes(shape), _sizes(stride)
        if len(shape) != len(stride) or type(offset) is not int or offset < 0 or device not in _FRAME_DEVICES:
            raise WireError("a tensor whose layout is not shapes and strides")
        if device == "meta":
            if index != -1:
                raise WireError("a meta tensor with data")
            try:
                return torch.empty(0, dtype=dtype, device="meta").as_strided(shape, stride, offset)
            except (RuntimeError, ValueError):
                raise WireError("a meta tensor whose layout torch refuses") from None
        if type(index) is not int or not 0 <= index < len(self.storages):
            raise WireError("a tensor over a storage the frame does not hold")
        storage = self.storages[index]
        extent = 0 if 0 in shape else offset + 1 + sum((n - 1) * s for n, s in zip(shape, stride, strict=True))
        if extent * itemsize > storage.nbytes():
            raise WireError("a tensor that reaches past its storage")
        try:
            return torch.empty(0, dtype=dtype).set_(storage, offset, shape, stride)
        except (RuntimeError, ValueError, TypeError):
            raise WireError("a tensor whose layout torch refuses") from None


_ITEMSIZES: dict = {}


def _itemsize(dtype) -> int | None:
    """Bytes per element of ``dtype``, or None for one a frame does not carry (quantized)."""
    if dtype not in _ITEMSIZES:
        if str(dtype).removeprefix("torch.").startswith(("qint", "quint")):
            _ITEMSIZES[dtype] = None
            return None
        try:
            probe = torch.empty(0, dtype=dtype)
            _ITEMSIZES[dtype] = None if probe.is_quantized else probe.element_size()
        except (RuntimeError, TypeError):
            _ITEMSIZES[dtype] = None
    return _ITEMSIZES[dtype]


_PLAIN_ITEMS = 10_000  # a larger message goes as an archive: telling would cost more than it saves
_PLAIN_INT = 2**63


def _plain(body) -> bool:
    """Whether the prepared ``body`` is only None, booleans, ints of 64 bits, finite floats,
    strings, lists and dicts with string keys: JSON gives back each of these as it was
    (a tuple, a Size, a tensor, bytes would not come back as themselves)."""
    stack, seen = [body], 0
    while stack:
        value = stack.pop()
        seen += 1
        if seen > _PLAIN_ITEMS:
            return False
        kind = type(value)
        if value is None or kind is bool or kind is str:
            continue
        if kind is int:
            if not -_PLAIN_INT <= value < _PLAIN_INT:
                return False
        elif kind is float:
            if not math.isfinite(value):
                return False
        elif kind is list:
            stack.extend(value)
        elif kind is dict:
            if not all(type(key) is str for key in value):
                return False
            stack.extend(value.values())
        else:
            return False
    return True


# ------------------------------------------------------------------ decode (the receiver)


class Opaque:
    """A learner value that is not data: what the judge knows of it is its class."""

    def __init__(self, type_name: str, why: str):
        self.type_name = type_name
        self.why = why

    def __repr__(self) -> str:
        return f"<{self.type_name}: {self.why}>"


class Raised(Exception):
    """An exception raised in the learner's kernel, as data: its class names and message."""

    def __init__(self, record: dict):
        self.names = [str(n) for n in record.get("names") or []]
        self.qualnames = [str(n) for n in record.get("qualnames") or []]
        self.message = str(record.get("message") or "")
        self.line = record.get("line") if isinstance(record.get("line"), int) else None
        self.name = str(record.get("name") or "")
        self.owner = str(record.get("obj") or "")
        self.traceback = [str(line) for line in record.get("traceback") or []][:60]
        found = record.get("context")
        self.context: dict | None = None
        if isinstance(found, list) and len(found) == len(_CONTEXT_KEYS):
            self.context = dict(zip(_CONTEXT_KEYS, found, strict=True))
        super().__init__(self.message)

    @property
    def ename(self) -> str:
        return self.names[0] if self.names else "Exception"

    def __str__(self) -> str:
        return self.message


# Autograd facts of decoded tensors that a plain tensor cannot carry (is_leaf and grad_fn of
# a non-leaf, .grad of any, the version counter). Keyed by id, holding the tensor, so an id is
# never reused while its entry lives; cleared by the judge after each verification.
FACTS: dict = {}


def facts(t) -> dict | None:
    entry = FACTS.get(id(t))
    return entry[1] if entry is not None and entry[0] is t else None


def is_leaf(t) -> bool:
    f = facts(t)
    return f["is_leaf"] if f is not None else t.is_leaf


def requires_grad(t) -> bool:
    f = facts(t)
    return f["requires_grad"] if f is not None else t.requires_grad


def grad_fn_name(t):
    f = facts(t)
    if f is not None:
        return f["grad_fn"]
    return None if t.grad_fn is None else type(t.grad_fn).__name__


GRAPH_NODES = 2000  # a walk of a graph larger than this names the ops it met first


def graph_ops(t) -> list | None:
    """The class names of the autograd nodes ``t`` was computed through, sorted, each once
    (``NllLossBackward0``, ``LogSoftmaxBackward0``): which operations made the value, read
    from the graph itself rather than from the text. None where ``t`` has no grad_fn."""
    f = facts(t)
    if f is not None:
        return f["graph"]
    root = getattr(t, "grad_fn", None)
    if root is None:
        return None
    return sorted({_node_name(node) for node in _graph_nodes(root)})


def _graph_nodes(root):
    """The nodes of ``root``'s graph, each once, the first GRAPH_NODES of them."""
    seen: set = set()
    todo = [root]
    while todo and len(seen) < GRAPH_NODES:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        todo += [child for child, _ in _safe(lambda n=node: n.next_functions) or ()]


def backpropagated(t) -> bool | None:
    """Whether backward() (or autograd.grad) has run through ``t``'s graph: the tensors its
    nodes saved for backward are freed then (unless retain_graph). None where that cannot be
    read: no grad_fn, or a graph whose nodes saved no tensor."""
    f = facts(t)
    if f is not None:
        return f["backpropagated"]
    root = getattr(t, "grad_fn", None)
    if root is None:
        return None
    freed = False
    for node in _graph_nodes(root):
        for attr in _saved_attributes(type(node)):
            try:
                if isinstance(getattr(node, attr), torch.Tensor):
                    return False  # still held
            except RuntimeError:  # "... after they have already been freed"
                freed = True
            except Exception:
                pass
    return True if freed else None


_SAVED: dict = {}  # node class -> the names of what its nodes save for backward


def _saved_attributes(kind: type) -> tuple:
    names = _SAVED.get(kind)
    if names is None:
        names = _SAVED[kind] = tuple(a for a in dir(kind) if a.startswith("_saved_"))
    return names


def _node_name(node) -> str:
    # A custom autograd.Function's node is named after its class, which the code chose: one
    # called LogSoftmax must not pass for torch's own LogSoftmaxBackward0.
    if isinstance(node, torch.autograd.function.BackwardCFunction):
        return "autograd.Function " + type(node).__name__.removesuffix("Backward")
    return type(node).__name__


def _names(value) -> list | None:
    if type(value) is not list or len(value) > GRAPH_NODES:
        return None
    return [str(v)[:200] for v in value if type(v) is str]


def grad_of(t):
    f = facts(t)
    if f is not None:
        return f["grad"]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return t.grad


def version_counter(value) -> int | None:
    """A tensor's version counter; None for what has none (not a tensor, an inference tensor)."""
    if not isinstance(value, torch.Tensor):
        return None
    try:
        return int(value._version)
    except RuntimeError:  # inference tensors do not track it
        return None


def _set_version(t: torch.Tensor, version) -> None:
    """Give a decoded tensor the learner's version counter, so that a check's own expression
    reading ``h._version`` sees the learner's count, not the decoder's (``set_`` counts one).
    Where this torch has no way to set it, the count stays the decoder's."""
    if type(version) is not int or version < 0 or version_counter(t) in (None, version):
        return
    setter = getattr(torch._C._autograd, "_unsafe_set_version_counter", None)
    if setter is None:
        return
    try:
        setter((t,), (version,))
    except (TypeError, RuntimeError):
        try:
            setter(t, version)
        except (TypeError, RuntimeError):
            pass


def version_of(t) -> int:
    f = facts(t)
    if f is not None:
        return f["version"]
    return version_counter(t) or 0


def origin_of(t) -> frozenset:
    f = facts(t)
    return f.get("origin", frozenset()) if f is not None else frozenset()


def learner_ref(t) -> int | None:
    """The learner's own tensor that ``t`` was decoded from, while the judge has not changed it."""
    f = facts(t)
    if f is None or f.get("ref") is None or version_counter(t) != f.get("local_version"):
        return None
    return f["ref"]


def storage_key(t):
    f = facts(t)
    return f.get("ptr") if f is not None else None


class Decoder:
    """Rebuilds a message: ``remote`` turns a handle record into a proxy (judge side)."""

    def __init__(self, remote=None, module_factory=None):
        self.remote = remote
        self.module_factory = module_factory
        self.items = 0
        self._memo: dict = {}

    def __call__(self, value, depth: int = 0):
        self.items += 1
        if self.items > _READ_ITEMS or depth > _READ_DEPTH:
            raise WireError("a value nested too deeply or with too many items")
        kind = type(value)
        if value is None or kind in (bool, int, float, complex, str, bytes, torch.dtype, torch.device, torch.Size):
            return value
        if kind is torch.Tensor or kind is torch.nn.Parameter:
            return value  # inputs the judge sent (learner side)
        if kind is list:
            return [self(v, depth + 1) for v in value]
        if kind is tuple:
            return tuple(self(v, depth + 1) for v in value)
        if kind is not dict:
            raise WireError(f"a value of type {kind.__name__}")
        tag = value.get(TAG)
        if tag == "tensor":
            return self._tensor(value, depth)
        if tag == "ndarray":
            data = value.get("data")
            if type(data) is not torch.Tensor:
                raise WireError("an array without data")
            arr = data.numpy()
            return arr
        if tag == "complex":
            return complex(_number(value.get("re")), _number(value.get("im")))
        if tag == "dtype":
            dtype = getattr(torch, str(value.get("name")), None)
            if type(dtype) is not torch.dtype:
                raise WireError("a dtype torch does not know")
            return dtype
        if tag == "device":
            index = value.get("index")
            try:
                where = str(value.get("type"))
                return torch.device(where, index) if type(index) is int else torch.device(where)
            except (RuntimeError, ValueError):
                raise WireError("a device torch does not know") from None
        if tag == "bytes":
            data = value.get("data")
            if type(data) is not torch.Tensor or data.dtype != torch.uint8 or data.dim() != 1:
                raise WireError("bytes without their data")
            return bytes(data.numpy().tobytes())
        if tag == "npscalar":
            return np.dtype(str(value.get("dtype"))).type(self(value.get("value"), depth + 1))
        if tag in ("tuple", "set", "frozenset"):
            items = [self(v, depth + 1) for v in _list(value.get("items"))]
            return {"tuple": tuple, "set": set, "frozenset": frozenset}[tag](items)
        if tag == "dict":
            out = {}
            for pair in _list(value.get("items")):
                if type(pair) is not list or len(pair) != 2:
                    raise WireError("a dictionary entry that is not a pair")
                out[self(pair[0], depth + 1)] = self(pair[1], depth + 1)
            return out
        if tag == "range":
            return range(*[int(a) for a in _list(value.get("args"))])
        if tag == "slice":
            return slice(*[self(a, depth + 1) for a in _list(value.get("args"))])
        if tag == "module-name":
            return _judge_module(str(value.get("name")))
        if tag == "opaque":
            return Opaque(str(value.get("type")), str(value.get("why")))
        if tag == "raised":
            return Raised(value)
        if tag == "handle":
            return self.remote(value) if self.remote is not None else Opaque(str(value.get("type")), "an object")
        if tag == "module":
            return self._module(value, depth)
        raise WireError(f"a record of unknown kind {tag!r}")

    def _tensor(self, record: dict, depth: int):
        key = id(record)
        if key in self._memo:
            return self._memo[key]
        data = record.get("data")
        if data is None and type(record.get("meta")) is dict:
            data = self._meta(record["meta"], depth)
        if type(data) is not torch.Tensor:
            raise WireError("a tensor record without a tensor")
        grad = record.get("grad")
        # Before any view of it is made: a view records its base's count when it is made, and a
        # count changed afterwards reads to autograd as a write into the base.
        _set_version(data, record.get("version"))
        t = data
        if record.get("inference") and not record.get("requires_grad"):
            # Made under inference_mode in the learner's kernel: one here too (a copy of the
            # values: an inference tensor cannot share storage with a normal one).
            with torch.inference_mode():
                t = data.clone()
        elif record.get("param"):
            t = torch.nn.Parameter(data, requires_grad=bool(record.get("requires_grad")))
        elif record.get("requires_grad") and (data.is_floating_point() or data.is_complex()):
            t = data.requires_grad_(True)
            if not record.get("is_leaf"):
                # A check's own expressions (a mistake's `when`) read w.is_leaf, w.grad_fn: a
                # same-shape alias is a non-leaf with the tensor's layout and storage.
                t = t.view_as(t)
        self._memo[key] = t
        grad_value = self._tensor(grad, depth + 1) if type(grad) is dict else None
        if grad_value is not None and t.requires_grad and (t.is_leaf or record.get("retains_grad")):
            try:
                if not t.is_leaf:
                    t.retain_grad()
                t.grad = grad_value
            except (RuntimeError, TypeError):
                pass
        FACTS[id(t)] = (
            t,
            {
                "is_leaf": bool(record.get("is_leaf")),
                "requires_grad": bool(record.get("requires_grad")),
                "grad_fn": record.get("grad_fn") if isinstance(record.get("grad_fn"), str) else None,
                "graph": _names(record.get("graph")),
                "backpropagated": record.get("backpropagated") if type(record.get("backpropagated")) is bool else None,
                "grad": grad_value,
                "version": int(record.get("version") or 0),
                "ptr": record.get("ptr") if isinstance(record.get("ptr"), int) else None,
                "origin": frozenset(str(o) for o in record.get("origin") or []),
                "ref": record.get("ref") if type(record.get("ref")) is int else None,
                "local_version": version_counter(t),
            },
        )
        return t

    def _meta(self, layout: dict, depth: int) -> torch.Tensor:
        """A meta tensor from its layout (meta tensors hold no data to send)."""
        shape, stride, offset = _sizes(layout.get("shape")), _sizes(layout.get("stride")), layout.get("offset")
        dtype = self(layout.get("dtype"), depth + 1)
        if type(dtype) is not torch.dtype or len(shape) != len(stride) or type(offset) is not int or offset < 0:
            raise WireError("a meta tensor whose layout is not shapes and strides")
        try:
            return torch.empty(0, dtype=dtype, device="meta").as_strided(shape, stride, offset)
        except (RuntimeError, ValueError):
            raise WireError("a meta tensor whose layout torch refuses") from None

    def _module(self, record: dict, depth: int):
        key = id(record)
        if key in self._memo:
            return self._memo[key]
        if self.module_factory is None:
            raise WireError("a module where data was expected")
        module = self.module_factory(record, self.remote(record.get("handle")) if self.remote else None)
        self._memo[key] = module
        for name, value in _items(record.get("params")):
            module._parameters[name] = self(value, depth + 1) if value is not None else None
        for name, value in _items(record.get("buffers")):
            module._buffers[name] = self(value, depth + 1) if value is not None else None
            if name not in (record.get("persistent") or []):
                module._non_persistent_buffers_set.add(name)
        for name, value in _items(record.get("children")):
            module._modules[name] = self(value, depth + 1) if value is not None else None
        for name, value in _items(record.get("attrs")):
            object.__setattr__(module, name, self(value, depth + 1))
        module.training = bool(record.get("training"))
        hooks = {k: int(v) for k, v in _items(record.get("hooks"))}
        module.__dict__["remote_hooks"] = hooks
        # Placeholders, so len(model._forward_hooks) reads the learner's count (calls are remote).
        for kind, attr in (
            ("forward", "_forward_hooks"),
            ("forward_pre", "_forward_pre_hooks"),
            ("backward", "_backward_hooks"),
        ):
            getattr(module, attr).update({-(i + 1): None for i in range(min(hooks.get(kind, 0), 1000))})
        return module


def _sizes(value) -> list[int]:
    if type(value) is not list or len(value) > 64 or not all(type(n) is int and n >= 0 for n in value):
        raise WireError("a meta tensor whose layout is not shapes and strides")
    return value


def _number(value) -> float:
    if type(value) not in (int, float):
        raise WireError("a complex number whose parts are not numbers")
    return float(value)


def _list(value) -> list:
    if type(value) is not list:
        raise WireError("a record whose items are not a list")
    return value


def _items(value):
    if value is None:
        return []
    if type(value) is not dict:
        raise WireError("a record whose fields are not a mapping")
    return [(str(k), v) for k, v in value.items()]


def _judge_module(name: str):
    import importlib

    if name.split(".")[0] in JUDGE_MODULES:
        try:
            return importlib.import_module(name)
        except ImportError:
            pass
    return Opaque("module", f"the module {name}")


def load(text, decoder: Decoder | None = None):
    """Decode one message: bounded, loaded without running code, validated, rebuilt."""
    if not isinstance(text, str):
        raise WireError("the answer is not text")
    if len(text) > MAX_BYTES:
        raise WireError(f"the answer is larger than {MAX_BYTES // 2**20} MB")
    if text.startswith(FRAME_MARK):
        message = _read_frame(text)
    elif text.startswith("{"):  # JSON (encode): never the start of base64 text
        try:
            message = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise WireError(f"the answer is not plain data ({type(exc).__name__})") from None
    else:
        try:
            raw = base64.b64decode(text.encode("ascii"), validate=True)
        except (ValueError, UnicodeEncodeError):
            raise WireError("the answer is not base64 text") from None
        try:
            message = torch.load(io.BytesIO(raw), weights_only=True, map_location=None)
        except Exception as exc:
            raise WireError(f"the answer is not plain data ({type(exc).__name__})") from None
    if type(message) is not dict or message.get("v") != WIRE_VERSION or "body" not in message:
        raise WireError(f"the answer does not follow the judge's format (version {WIRE_VERSION})")
    return (decoder or Decoder())(message["body"])
