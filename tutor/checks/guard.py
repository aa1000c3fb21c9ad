"""Whether learner code changed what the checks rely on.

The checks read the learner's tensors through torch and NumPy and run in the learner's
process. Code that replaces ``torch.Tensor.stride``, ``builtins.isinstance`` or
``numpy.isclose``, patches a method on one tensor, hands over a tensor subclass that
overrides torch's own methods, leaves a torch function mode active or keeps a thread
running could make a wrong answer look right. None of that is needed to solve an
exercise, so it is reported as tampering (a failed attempt), never checked around.
"""

import builtins
import multiprocessing.queues
import operator
import os
import sys
import threading
import time
import types

import numpy as np
import torch


class Tampered(BaseException):
    """Learner code changed something the checks rely on; the message says what.

    A BaseException: the checks' ``except Exception`` must not turn it into one failed check."""


_Tensor = torch.Tensor
_TensorBase = torch._C.TensorBase
_TORCH_TENSORS = (torch.Tensor, torch.nn.Parameter)
_TENSOR_API = frozenset(dir(_TensorBase)) | frozenset(dir(torch.Tensor))
_instance_dict = vars(torch.Tensor)["__dict__"].__get__ if "__dict__" in vars(torch.Tensor) else None
_function_stack = getattr(torch._C, "_len_torch_function_stack", lambda: 0)
_dispatch_stack = getattr(torch._C, "_len_torch_dispatch_stack", lambda: 0)
_current_frames = sys._current_frames
_is, _itemgetter = operator.is_, operator.itemgetter  # taken before learner code can replace them
_QUEUE_FEED = multiprocessing.queues.Queue._feed  # type: ignore[attr-defined]
_sleep = time.sleep
_monotonic = time.monotonic
_threads = threading._active  # type: ignore[attr-defined]  # ident -> Thread, for names only

_STREAMS = ("stdout", "stderr", "stdin", "displayhook", "excepthook")
# Classes whose methods the checks call on the learner's objects: tensors, and torch's
# modules (a module check runs their forward).
WATCHED_CLASSES = (
    torch.Tensor,
    torch.nn.Parameter,
    *sorted(
        {v for v in vars(torch.nn).values() if isinstance(v, type) and issubclass(v, torch.nn.Module)},
        key=lambda c: c.__qualname__,
    ),
)
# Keys that torch itself adds to class dicts lazily; not tampering.
# Caches Python and torch fill in themselves: copyreg's __slotnames__ (set the first time an
# object of the class is pickled, e.g. torch.save(model.state_dict(keep_vars=True))).
# torch.compile's mutation guard marks nn.Module with ___needs_generation_tag_patch.
_CLASS_NOISE = frozenset(
    {"__annotations__", "__abstractmethods__", "_abc_impl", "__slotnames__", "___needs_generation_tag_patch"}
)


def _watched_modules(library: dict) -> list:
    """builtins, torch, NumPy and every module the check library's modules import."""
    found = {id(m): m for m in (builtins, torch, torch.nn, torch.nn.functional, np, np.random)}
    # The public copy too: the private one ignores it, but replacing it is still tampering.
    # Looked up by name, not by walking sys.modules: touching every module of a forked
    # kernel would copy thousands of pages it shares with the fork server.
    for name in library:
        module = sys.modules.get(name)
        if isinstance(module, types.ModuleType):
            found.setdefault(id(module), module)
    private = {id(m) for m in library.values()}
    for module in library.values():
        for value in vars(module).values():
            if isinstance(value, types.ModuleType) and id(value) not in private:
                found.setdefault(id(value), value)
    return list(found.values())


class _Registry:
    """A dict of functions watched like a module: its items are its attributes."""

    def __init__(self, name: str, mapping: dict):
        self.__name__ = name
        self.mapping = mapping


def _entries(owner) -> dict:
    return owner.mapping if isinstance(owner, _Registry) else vars(owner)


def _put(owner, name, value) -> None:
    if isinstance(owner, _Registry):
        owner.mapping[name] = value
    else:
        setattr(owner, name, value)


def _label(owner) -> str:
    return (
        owner.__name__
        if isinstance(owner, (types.ModuleType, _Registry))
        else f"{owner.__module__}.{owner.__qualname__}"
    )


def _label_class(cls) -> str:
    return "torch.Tensor" if cls is torch.Tensor else f"torch.nn.{cls.__name__}"


class Snapshot:
    """The functions, classes and modules the checks use, as they were before learner code."""

    def __init__(self, library: dict):
        self.modules = []
        registries = set()
        for module in _watched_modules(library):
            kept = {
                k: v
                for k, v in vars(module).items()
                if callable(v) or (isinstance(v, types.ModuleType) and not k.startswith("__"))
            }
            self.modules.append((module, kept))
            for k, v in vars(module).items():
                # Registries such as KINDS (name -> check function) count as the module's own.
                if type(v) is dict and v and not k.startswith("__") and all(callable(f) for f in v.values()):
                    if id(v) in registries:
                        continue
                    registries.add(id(v))
                    self.modules.append((_Registry(f"{module.__name__}.{k}", v), dict(v)))
        self.classes = [(cls, dict(vars(cls))) for cls in WATCHED_CLASSES]
        self._modules_fast = [_identity_check(kept) for _, kept in self.modules]
        self._classes_fast = [_identity_check(kept) for _, kept in self.classes]
        # The kernel's own streams and hooks: the verdict is sent through them.
        self.streams = {n: getattr(sys, n, None) for n in _STREAMS}
        self.function_modes = _function_stack()
        self.dispatch_modes = _dispatch_stack()
        self.threads = set(_current_frames())
        self.helpers: list = []  # (name, function, what defined it): the setup's own functions

    def watch_helpers(self, helpers: dict) -> None:
        """Watch the setup's functions too: the checks call them in this kernel, so code that
        changes one in place (its ``__code__``, its defaults) would change what a check says,
        where rebinding its name is caught as the setup's helper replaced."""
        self.helpers = [
            (name, fn, _definition(fn)) for name, fn in helpers.items() if isinstance(fn, types.FunctionType)
        ]

    def helpers_changed(self) -> list:
        """'_returned.__code__', ...: the setup functions changed in place since they were watched."""
        out = []
        for name, fn, kept in self.helpers:
            now = _definition(fn)
            out += [f"{name}.{attr}" for attr, a, b in zip(_DEFINITION, now, kept, strict=True) if a is not b]
        return out

    def changes(self) -> list:
        """'torch.Tensor.stride', 'builtins.isinstance', ...: what differs now."""
        # Identity first, in comprehensions: thousands of entries are the same objects after
        # nearly every run, and the checks ask after every call of the learner's code.
        out = []
        for (module, kept), unchanged in zip(self.modules, self._modules_fast, strict=True):
            now = _entries(module)
            if unchanged(now):
                continue
            get = now.get
            for name in [name for name, value in kept.items() if get(name, _MISSING) is not value]:
                if not _same(get(name, _MISSING), kept[name]) and not _torch_wrapper(get(name), kept[name]):
                    out.append(f"{_label(module)}.{name}")
        out.extend(f"sys.{n}" for n, v in self.streams.items() if not _same(getattr(sys, n, None), v))
        for (cls, kept), unchanged in zip(self.classes, self._classes_fast, strict=True):
            now = vars(cls)
            if len(now) == len(kept) and unchanged(now):
                continue
            get = now.get
            differing = [name for name, value in kept.items() if get(name, _MISSING) is not value]
            if len(now) != len(kept) - len(differing) + sum(name in now for name in differing):
                differing += [name for name in now if name not in kept]  # an attribute added to the class
            for name in sorted(differing):
                if name in _CLASS_NOISE:
                    continue
                if not _compiles_own(get(name, _MISSING)):
                    out.append(f"{_label_class(cls)}.{name}")
        return out

    def restore(self) -> None:
        """Put back what was replaced, so the verdict itself can still be sent."""
        for _, fn, kept in self.helpers:
            for attr, value in zip(_DEFINITION, kept, strict=True):
                if getattr(fn, attr) is not value:
                    try:
                        setattr(fn, attr, value)
                    except Exception:
                        pass
        for name, value in self.streams.items():
            if not _same(getattr(sys, name, None), value):
                setattr(sys, name, value)
        for module, kept in self.modules:
            now = _entries(module)
            for name, value in kept.items():
                if not _same(now.get(name, _MISSING), value):
                    try:
                        _put(module, name, value)
                    except Exception:
                        pass
        for cls, kept in self.classes:
            for name in set(vars(cls)) - set(kept):
                try:
                    delattr(cls, name)
                except Exception:
                    pass
            for name, value in kept.items():
                if vars(cls).get(name, _MISSING) is not value:
                    try:
                        setattr(cls, name, value)
                    except Exception:
                        pass

    def new_threads(self, grace: float = 1.0) -> list:
        """Threads started since the snapshot that still run after ``grace`` seconds."""
        deadline = _monotonic() + grace
        while True:
            alive = [
                t
                for t in _current_frames()
                if t not in self.threads and not _kernel_thread(t) and not _compiles_thread(t) and not _loader_thread(t)
            ]
            if not alive or _monotonic() >= deadline:
                break
            _sleep(0.02)
        names = []
        for ident in alive:
            thread = _threads.get(ident)
            names.append(thread.name if thread is not None else f"thread {ident}")
        return names

    def verify(self, when: str) -> None:
        """Raise Tampered (after restoring) when anything the checks rely on changed."""
        altered = self.helpers_changed()
        if altered:
            self.restore()
            raise Tampered(
                f"Your code changed the exercise's own helper {altered[0].split('.')[0]} in place "
                f"({altered[0]} was replaced) {when}; the checks use the exercise's helpers as the setup defined "
                "them, so this attempt fails. Solve the exercise without changing them."
            )
        changed = self.changes()
        if changed:
            self.restore()
            shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
            raise Tampered(
                f"Your code replaced {shown} {when}; the checks cannot trust torch or Python once their own "
                "functions are replaced, so this attempt fails. Solve the exercise without patching them."
            )
        if _function_stack() > self.function_modes or _dispatch_stack() > self.dispatch_modes:
            raise Tampered(
                f"Your code left a torch function or dispatch mode active {when}; the checks cannot trust what "
                "torch reports through it, so this attempt fails. Use modes in a with block."
            )
        threads = self.new_threads()
        if threads:
            raise Tampered(
                f"Your code left a background thread running ({', '.join(threads[:3])}) {when}; a result that "
                "another thread can change cannot be trusted, so this attempt fails. Join the threads you start "
                "before your code ends."
            )


_MISSING = object()
# What a function does, besides its closure: replaced in place, the same function object
# (and so the same name) runs other code.
_DEFINITION = ("__code__", "__defaults__", "__kwdefaults__")


def _definition(fn) -> tuple:
    return tuple(getattr(fn, attr) for attr in _DEFINITION)


def _identity_check(kept: dict):
    """A test that every name of ``kept`` still holds the very object it held, in C: the
    guard looks after every call of the learner's code, and thousands of entries are
    nearly always the same objects. Identity only: a comparison could run learner code
    (an object whose __eq__ says it equals anything). False sends the caller to the slow
    path, which names what differs."""
    if len(kept) < 2:
        return lambda now: False
    names, values = tuple(kept), tuple(kept.values())
    getter = _itemgetter(*names)

    def unchanged(now) -> bool:
        try:
            return all(map(_is, getter(now), values))
        except KeyError:  # a name deleted
            return False

    return unchanged


def _same(now, kept) -> bool:
    # The kernel binds a fresh bound method of its own for each cell (builtins.input is the
    # kernel's raw_input, sys.excepthook the shell's): the same function on the same object
    # is the same hook, and a later cell of a verification is not tampering.
    if now is kept:
        return True
    return (
        type(now) is types.MethodType
        and type(kept) is types.MethodType
        and now.__func__ is kept.__func__
        and now.__self__ is kept.__self__
    )


# torch.compile's first use in a process wraps nn.Module's __init__ and __setstate__ (dynamo's
# mutation guard notices modules made while it traces), aot_eager's progress bar starts
# tqdm's monitor thread, and some releases (2.4) start the compile workers' reader thread:
# all come with using torch, not with patching it. The guard only
# reports; the verdict rests on the data the judge gets, so a disguise here forges nothing.
_COMPILE_MODULES = ("torch._dynamo.", "torch._inductor.")


def _compiles_own(value) -> bool:
    module = getattr(value, "__module__", None)
    return isinstance(module, str) and module.startswith(_COMPILE_MODULES)


_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep


def _torch_wrapper(now, kept) -> bool:
    """torch's own wrapper around one of its functions (torch.compile wraps torch.manual_seed)."""
    code = getattr(now, "__code__", None)
    return getattr(now, "__wrapped__", None) is kept and code is not None and code.co_filename.startswith(_TORCH_DIR)


def _compiles_thread(ident: int) -> bool:
    """tqdm's monitor, or a thread of torch.compile's own (the compile workers' reader)."""
    thread = _threads.get(ident)
    if thread is None:
        return False
    return type(thread).__module__ == "tqdm._monitor" or _compiles_own(getattr(thread, "_target", None))


def _loader_thread(ident: int) -> bool:
    """A multiprocessing queue's feeder, as a DataLoader with workers starts one per worker
    queue: it lives as long as the loader's iterator (persistent workers, an epoch cut
    short), torch's doing, not the learner's. Known by its target, taken before learner code."""
    thread = _threads.get(ident)
    return thread is not None and getattr(thread, "_target", None) is _QUEUE_FEED


def _kernel_thread(ident: int) -> bool:
    """A thread the kernel itself starts on demand while learner code runs: pyzmq's garbage
    collector for zero-copy sends appears with the first large output (e.g. a big print)."""
    garbage = sys.modules.get("zmq.utils.garbage")
    collector_thread = getattr(getattr(garbage, "gc", None), "thread", None)
    return collector_thread is not None and _threads.get(ident) is collector_thread


def tensor_tampering(value, name: str) -> str | None:
    """A sentence when ``value`` is a tensor whose own methods were replaced, else None."""
    cls = type(value)
    if not issubclass(cls, _Tensor):
        return None
    if cls not in _TORCH_TENSORS and not cls.__module__.startswith("torch."):
        for klass in cls.__mro__:
            if klass in _TORCH_TENSORS or klass is _TensorBase:
                break
            overridden = sorted(k for k in vars(klass) if k in _TENSOR_API and k not in ("__module__", "__doc__"))
            overridden = [k for k in overridden if k not in ("__dict__", "__weakref__", "__qualname__", "__slots__")]
            if overridden:
                return (
                    f"{name} is a tensor subclass ({cls.__name__}) that overrides {', '.join(overridden[:3])}; "
                    "the checks cannot trust what it reports, so this attempt fails. Return a plain tensor."
                )
    own = _instance_dict(value) if _instance_dict is not None else {}
    shadowed = sorted(k for k in own if k in _TENSOR_API)
    if shadowed:
        return (
            f"Your code replaced {name}.{shadowed[0]} on the tensor itself; the checks cannot trust it, "
            "so this attempt fails."
        )
    return None


_PLAIN = (int, float, complex, str, bytes, tuple, list, dict, set, frozenset, np.ndarray, np.generic, torch.Size)
# What comparing, measuring or converting a value asks of it (its repr only words a message).
_ASKED = frozenset(
    {
        "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__", "__len__", "__iter__",
        "__getitem__", "__contains__", "__bool__", "__float__", "__int__", "__index__", "__complex__",
        "__abs__", "__sub__", "__rsub__", "__round__", "__array__", "item", "tolist", "shape", "dtype",
    }
)  # fmt: skip


def disguised(value, name: str) -> str | None:
    """A sentence when ``value`` is of a class the code defined (module ``__main__``) that
    subclasses a number, string, container or array and overrides how it compares."""
    cls = type(value)
    if cls.__module__ != "__main__" or not issubclass(cls, _PLAIN):
        return None
    for klass in cls.__mro__:
        if klass.__module__ != "__main__":
            break
        overridden = sorted(_ASKED & set(vars(klass)))
        if overridden:
            return (
                f"{name} is a {cls.__name__}, a subclass of {_plain_name(cls)} that overrides "
                f"{', '.join(overridden[:3])}; the checks cannot trust how it compares, so this attempt fails. "
                "Use the plain type."
            )
    return None


def _plain_name(cls) -> str:
    for base in cls.__mro__:
        if base in _PLAIN:
            return base.__name__
    return "a built-in type"


def _opaque(value, name: str) -> str | None:
    """What the learner's kernel sent in place of a value that is not data (wire.py)."""
    if type(value).__name__ != "Opaque" or not hasattr(value, "why"):
        return None
    kind = str(value.type_name).rsplit(".", 1)[-1]
    return (
        f"{name} is a {kind}, {value.why}; the checks compare plain values only and cannot trust how it "
        "compares, so this attempt fails. Use the plain type."
    )


def scan(value, name: str, depth: int = 0) -> None:
    """Raise Tampered for a tampered tensor in ``value`` (or in a list, tuple or dict in it)."""
    message = tensor_tampering(value, name) or disguised(value, name) or _opaque(value, name)
    if message:
        raise Tampered(message)
    if depth >= 2:
        return
    if type(value) in (list, tuple):
        for i, item in enumerate(value[:64]):
            scan(item, f"{name}[{i}]", depth + 1)
    elif type(value) is dict:
        for i, (key, item) in enumerate(value.items()):
            if i >= 64:
                break
            scan(item, f"{name}[{key!r}]", depth + 1)
