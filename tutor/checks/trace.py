"""A trace of PyTorch protocol calls made by the learner's code and by the reference.

While the reference solution and the learner's code run (and while a check calls into
them), thin wrappers record the calls that make up PyTorch's protocols: optimizer
``zero_grad``/``step``, ``backward``/``autograd.grad``, ``train``/``eval``, entering
``no_grad``/``inference_mode``/``enable_grad``, ``torch.save``/``torch.load``, device
moves, seeding and random draws, ``DataLoader`` construction, a ``GradScaler``'s
``scale``/``unscale_``/``step``/``update``, process-wide switches
(``use_deterministic_algorithms``, ``set_default_dtype``), and cross-entropy fed with
probabilities. tracediff.py compares the two traces when a check fails.

Only calls made directly by the learner's or the reference's own lines are recorded (a
``no_grad`` inside ``nn.init`` is torch's business), so the wrappers cost one frame look-up
per call; nothing is recorded while neither side is running.
"""

import contextlib
import os
import random
import sys
from typing import NamedTuple

import numpy as np
import torch

from .namespaces import SOLUTION, YOUR_CODE

USER_FILES = (YOUR_CODE, SOLUTION)
_TORCH_DIR = os.path.dirname(torch.__file__)
_THIS_FILE = __file__

RNG_DRAWS = ("rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "normal", "bernoulli")
INIT_DRAWS = (
    "uniform_",
    "normal_",
    "kaiming_uniform_",
    "kaiming_normal_",
    "xavier_uniform_",
    "xavier_normal_",
    "trunc_normal_",
    "orthogonal_",
)
# GradScaler's methods, by the kind of event a call of each records
SCALER_CALLS = {"scale": "scaler_scale", "unscale_": "unscale", "step": "scaler_step", "update": "scaler_update"}
RNG_METHODS = ("uniform_", "normal_", "random_", "bernoulli_", "exponential_")


_INHERITED = object()
_SEE_THROUGH: set = set()  # wrappers whose own calls into torch are the caller's calls
_RETIRED = "_ptfund_retired"  # set on a wrapper uninstalled while another tracer's wrapped it


class Event(NamedTuple):
    kind: str  # zero_grad, step, backward, train, no_grad, save, load, to, seed, draw, loader, ce_probs, ...
    name: str  # what the learner would call the object: 'opt', 'model', 'w' (or a phrase)
    info: dict


def _name_of(obj, frame, fallback: str, cache: dict | None = None) -> str:
    """The caller's variable that holds ``obj`` (locals first, then globals)."""
    if cache is not None and id(obj) in cache:
        return cache[id(obj)]
    name = _lookup(obj, frame, fallback)
    if cache is not None and name != fallback:
        cache[id(obj)] = name
    return name


def _lookup(obj, frame, fallback: str) -> str:
    if frame is not None:
        scopes = (frame.f_locals, frame.f_globals)
        for scope in scopes:
            for key, value in scope.items():
                if value is obj and not key.startswith("_"):
                    return key
        if isinstance(obj, torch.nn.Module):
            # A submodule of a named module (model.body.eval()): said as its attribute path.
            for scope in scopes:
                for key, value in scope.items():
                    if isinstance(value, torch.nn.Module) and not key.startswith("_") and value is not obj:
                        for child, module in value.named_children():
                            if module is obj:
                                return f"{key}.{child}" if child.isidentifier() else f"{key}[{child}]"
    return fallback


def _mode_layers(module) -> list:
    """Which of the layers that train()/eval() change the module holds: what its mode does."""
    found = set()
    for m in module.modules():
        if isinstance(m, torch.nn.modules.dropout._DropoutNd):
            found.add("dropout")
        elif isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            found.add("batch norm")
    return sorted(found)


def segment_order(segment) -> tuple:
    """The code's run first, then the checks in order, then anything else (the mistakes)."""
    if segment == "run":
        return (0, 0, "")
    if isinstance(segment, int):
        return (1, segment, "")
    return (2, 0, str(segment))


class Tracer:
    def __init__(self, records: tuple = ("ref", "learner")):
        self.side: str | None = None  # "ref" | "learner" while one of them runs, else None
        # The sides whose calls this process makes (a judge's learner runs elsewhere and sends
        # its own trace; with both roles in one process, recording it here too would double it).
        self.records = records
        self.segment = "run"
        self.traces: dict = {}  # (side, segment) -> [Event, ...]
        self.ran: set = set()  # (side, segment) pairs that ran, with or without events
        # (side, segment) pairs an exception ended: what ran after it there was never recorded
        self.stopped: set = set()
        self.looks: dict = {}  # (side, segment, loss) -> inputs inspected so far
        self.names: dict = {}  # id(obj) -> the learner's name for it, found once
        # Which call of a function check is running (the same number on both sides), so a
        # diff compares each learner call with the reference's call on the same inputs.
        self.call: int | None = None
        self.where = "<module>"
        self._undo: list = []

    # ------------------------------------------------------------ recording

    @contextlib.contextmanager
    def recording(self, side: str, segment="run", call: int | None = None):
        saved = self.side, self.segment, self.call
        self.side, self.segment, self.call = side, segment, call
        self.ran.add((side, segment))
        try:
            yield
        except BaseException:
            self.stopped.add((side, segment))
            raise
        finally:
            self.side, self.segment, self.call = saved

    def forget_call(self, side: str, segment, call: int) -> None:
        """Drop what one call recorded (a call that raised stopped early: its trace says nothing)."""
        key = (side, segment)
        if key in self.traces:
            self.traces[key] = [e for e in self.traces[key] if e.info.get("call") != call]

    def events(self, side: str, segment="run") -> list:
        return self.traces.get((side, segment), [])

    def segments(self) -> list:
        seen = []
        for _, seg in sorted(self.ran, key=lambda k: segment_order(k[1])):
            if seg not in seen:
                seen.append(seg)
        return seen

    def _caller(self, depth: int = 1):
        """The user frame that made this call, looking through at most ``depth`` torch frames."""
        if self.side not in self.records:  # None (neither runs) or a side another tracer records
            return None
        frame = sys._getframe(2)  # skip _caller and the wrapper
        torch_frames = 0
        while frame is not None and torch_frames < depth:
            filename = frame.f_code.co_filename
            if filename in USER_FILES:
                self.where = frame.f_code.co_name  # the function of the code that made the call
                return frame
            if filename == _THIS_FILE and (frame.f_code in _SEE_THROUGH or _idle_wrapper(frame, self)):
                frame = frame.f_back  # type: ignore[assignment]  # None ends the loop
                continue
            if not filename.startswith(_TORCH_DIR):
                return None  # the checker's own code, setup's helpers, or our wrapper (a nested call)
            torch_frames += 1
            frame = frame.f_back  # type: ignore[assignment]  # None ends the loop
        return None

    def _add(self, kind: str, name: str, **info) -> None:
        if self.call is not None:
            info["call"] = self.call
        if not self.where.startswith("<"):  # made inside a function, not by top-level code
            info["in"] = self.where
        self.traces.setdefault((self.side, self.segment), []).append(Event(kind, name, info))

    # ------------------------------------------------------------ patching

    def _patch(self, owner, attr: str, make):
        original = getattr(owner, attr)
        wrapper = make(original)
        try:
            wrapper.__wrapped__ = original
            wrapper.__name__ = getattr(original, "__name__", attr)
            wrapper.__doc__ = getattr(original, "__doc__", None)
        except (AttributeError, TypeError):
            pass
        own = attr in vars(owner)  # else inherited: removing the wrapper restores it
        setattr(owner, attr, wrapper)
        self._undo.append((owner, attr, original if own else _INHERITED, wrapper))

    def install(self) -> "Tracer":
        tracer = self

        def simple(kind, depth=1, fallback="", owner_arg=True, **fixed):
            def make(original):
                def wrapper(*args, **kwargs):
                    frame = tracer._caller(depth)
                    if frame is not None:
                        name = _name_of(args[0], frame, fallback, tracer.names) if owner_arg and args else fallback
                        tracer._add(kind, name, **fixed)
                    return original(*args, **kwargs)

                return wrapper

            return make

        self._patch(torch.optim.Optimizer, "zero_grad", simple("zero_grad", fallback="the optimizer"))
        self._patch(torch.nn.Module, "zero_grad", simple("zero_grad", fallback="the model"))

        def make_backward(original):
            def backward(tensor, *args, **kwargs):
                frame = tracer._caller()
                if frame is not None:
                    # Whether it adds onto gradients already there (a step before the code ran,
                    # say): the first few calls tell, each look walks the graph.
                    key = (tracer.side, tracer.segment, "stale")
                    stale = None
                    if tracer.looks.get(key, 0) < 3:
                        tracer.looks[key] = tracer.looks.get(key, 0) + 1
                        stale = _onto_grads(tensor)
                    tracer._add("backward", _name_of(tensor, frame, "the loss", tracer.names), stale=stale)
                return original(tensor, *args, **kwargs)

            return backward

        self._patch(torch.Tensor, "backward", make_backward)
        self._patch(torch.autograd, "grad", simple("backward", fallback="torch.autograd.grad", owner_arg=False))

        from torch.optim import optimizer as optim_module

        def step_hook(opt, args, kwargs):
            frame = tracer._caller(6)
            if frame is not None:
                tracer._add("step", _name_of(opt, frame, "the optimizer", tracer.names))

        handle = optim_module.register_optimizer_step_pre_hook(step_hook)
        self._undo.append((None, "hook", handle, None))

        def make_train(original):
            def train(module, mode=True):
                frame = tracer._caller(2)  # eval() is train(False)
                if frame is not None:
                    outer = sys._getframe(1).f_code
                    via = "eval" if outer.co_name == "eval" and outer.co_filename.startswith(_TORCH_DIR) else "train"
                    name = _name_of(module, frame, "the model", tracer.names)
                    tracer._add("train", name, mode=bool(mode), via=via, layers=_mode_layers(module))
                return original(module, mode)

            return train

        self._patch(torch.nn.Module, "train", make_train)
        for cls, kind in ((torch.no_grad, "no_grad"), (torch.inference_mode, "inference_mode")):
            self._patch(cls, "__enter__", simple(kind, owner_arg=False))
        self._patch(torch.enable_grad, "__enter__", simple("enable_grad", owner_arg=False))
        self._patch(torch, "set_grad_enabled", simple("set_grad_enabled", owner_arg=False))

        def make_save(original):
            def save(obj, f, *args, **kwargs):
                if tracer._caller() is not None:
                    tracer._add("save", "", what=_saved_kind(obj), to=_target(f))
                return original(obj, f, *args, **kwargs)

            return save

        def make_load(original):
            def load(f, *args, **kwargs):
                if tracer._caller() is not None:
                    tracer._add("load", "", weights_only=kwargs.get("weights_only"), source=_target(f))
                return original(f, *args, **kwargs)

            return load

        self._patch(torch, "save", make_save)
        self._patch(torch, "load", make_load)

        def make_move(method):
            def make(original):
                def move(obj, *args, **kwargs):
                    out = original(obj, *args, **kwargs)
                    frame = tracer._caller()
                    if frame is not None:
                        if isinstance(obj, torch.nn.Module):
                            tracer._add("move", _name_of(obj, frame, "the model"), method=method, module=True)
                        elif (
                            isinstance(obj, torch.Tensor)
                            and obj.requires_grad
                            and obj.is_leaf
                            and isinstance(out, torch.Tensor)
                            and not out.is_leaf
                        ):
                            tracer._add("moved_leaf", _name_of(obj, frame, "the tensor"), method=method)
                    return out

                return move

            return make

        for method in ("to", "cuda", "cpu", "double", "float", "half"):
            self._patch(torch.Tensor, method, make_move(method))
        for method in ("to", "cuda", "cpu"):
            self._patch(torch.nn.Module, method, make_move(method))

        def make_seed(label):
            def make(original):
                def seed(*args, **kwargs):
                    if tracer._caller() is not None:
                        tracer._add("seed", label, value=args[0] if args else kwargs.get("seed"))
                    return original(*args, **kwargs)

                return seed

            return make

        self._patch(torch, "manual_seed", make_seed("torch.manual_seed"))
        self._patch(np.random, "seed", make_seed("np.random.seed"))
        self._patch(random, "seed", make_seed("random.seed"))

        def make_draw(label):
            def make(original):
                def draw(*args, **kwargs):
                    if tracer._caller() is not None:
                        tracer._add("draw", label, generator=kwargs.get("generator") is not None)
                    return original(*args, **kwargs)

                return draw

            return make

        for fn in RNG_DRAWS:
            if hasattr(torch, fn):
                self._patch(torch, fn, make_draw(f"torch.{fn}"))
        for fn in RNG_METHODS:
            self._patch(torch.Tensor, fn, make_draw(f".{fn}"))

        def make_init(label):
            def make(original):
                def init(*args, **kwargs):
                    # through a layer's constructor (nn.Linear(...) -> reset_parameters -> init)
                    if tracer._caller(5) is not None:
                        tracer._add("draw", label, generator=kwargs.get("generator") is not None)
                    return original(*args, **kwargs)

                return init

            return make

        for fn in INIT_DRAWS:
            if hasattr(torch.nn.init, fn):
                self._patch(torch.nn.init, fn, make_init(f"nn.init.{fn}"))

        from torch.utils.data import DataLoader

        def make_loader(original):
            def init(loader, dataset, *args, **kwargs):
                if tracer._caller() is not None:
                    names = ("batch_size", "shuffle", "sampler")
                    given = dict(zip(names, args, strict=False))
                    given.update(kwargs)
                    sampler = given.get("sampler")
                    # A RandomSampler shuffles as shuffle=True does (which is one), with its own generator.
                    random_order = isinstance(sampler, torch.utils.data.RandomSampler)
                    tracer._add(
                        "loader",
                        "DataLoader",
                        shuffle=bool(given.get("shuffle")) or random_order,
                        sampler=type(sampler).__name__ if sampler is not None else None,
                        generator=given.get("generator") is not None
                        or (random_order and getattr(sampler, "generator", None) is not None),
                        batch_size=given.get("batch_size", 1),
                        num_workers=given.get("num_workers", 0),
                        drop_last=bool(given.get("drop_last", False)),
                    )
                return original(loader, dataset, *args, **kwargs)

            return init

        self._patch(DataLoader, "__init__", make_loader)

        functional = torch.nn.functional

        def make_loss(label):
            def make(original):
                def loss(input, target, *args, **kwargs):
                    # A wrong input is wrong on every call: the first few tell (each look costs ops).
                    key = (tracer.side, tracer.segment, label)
                    if tracer.side is not None and tracer.looks.get(key, 0) < 3 and tracer._caller(6) is not None:
                        tracer.looks[key] = tracer.looks.get(key, 0) + 1
                        shape = _probability_like(input, log=label == "nll_loss")
                        if shape:
                            tracer._add("ce_probs", label, looks=shape)
                    return original(input, target, *args, **kwargs)

                return loss

            return make

        def make_clip(label):
            def make(original):
                def clip(*args, **kwargs):
                    if tracer._caller() is not None:
                        tracer._add("clip", label)
                    return original(*args, **kwargs)

                return clip

            return make

        for fn in ("clip_grad_norm_", "clip_grad_value_"):
            self._patch(torch.nn.utils, fn, make_clip(fn))

        def make_var(label):
            def make(original):
                def var(*args, **kwargs):
                    if tracer._caller() is not None:
                        tracer._add(
                            "variance",
                            label,
                            correction=_correction(args[2:] if label.startswith("torch") else args[1:], kwargs),
                        )
                    return original(*args, **kwargs)

                return var

            return make

        for fn in ("var", "std"):
            self._patch(torch.Tensor, fn, make_var(f".{fn}"))
            self._patch(torch, fn, make_var(f"torch.{fn}"))

        def make_binary(symbol):
            def make(original):
                def binary(a, b):
                    out = original(a, b)
                    if (
                        tracer.side is not None
                        and isinstance(b, torch.Tensor)
                        and isinstance(out, torch.Tensor)
                        and a.dim() >= 1
                        and b.dim() >= 1
                        and out.numel() > max(a.numel(), b.numel())
                        and tracer._caller() is not None
                    ):
                        tracer._add("broadcast", symbol, a=tuple(a.shape), b=tuple(b.shape), out=tuple(out.shape))
                    return out

                return binary

            return make

        for dunder, symbol in (("__sub__", "-"), ("__add__", "+"), ("__mul__", "*"), ("__truediv__", "/")):
            self._patch(torch.Tensor, dunder, make_binary(symbol))

        def make_load_state(owner_kind):
            def make(original):
                def load_state_dict(obj, *args, **kwargs):
                    frame = tracer._caller()
                    if frame is not None:
                        tracer._add("load_state", _name_of(obj, frame, owner_kind), what=owner_kind)
                    return original(obj, *args, **kwargs)

                return load_state_dict

            return make

        self._patch(torch.nn.Module, "load_state_dict", make_load_state("the model"))
        self._patch(torch.optim.Optimizer, "load_state_dict", make_load_state("the optimizer"))
        self._patch(torch.optim.lr_scheduler.LRScheduler, "load_state_dict", make_load_state("the scheduler"))

        def make_rng_restore(original):
            def set_rng_state(*args, **kwargs):
                if tracer._caller() is not None:
                    tracer._add("load_state", "torch.set_rng_state", what="the random number generator")
                return original(*args, **kwargs)

            return set_rng_state

        self._patch(torch, "set_rng_state", make_rng_restore)
        self._patch(torch.random, "set_rng_state", make_rng_restore)  # the same function, by another name

        self._patch(functional, "cross_entropy", make_loss("cross_entropy"))
        self._patch(functional, "nll_loss", make_loss("nll_loss"))

        def make_setting(label, keyword):
            def make(original):
                def setting(*args, **kwargs):
                    if tracer._caller() is not None:
                        value = args[0] if args else kwargs.get(keyword)
                        tracer._add("setting", label, value=value if isinstance(value, bool) else repr(value)[:60])
                    return original(*args, **kwargs)

                return setting

            return make

        # Process-wide switches the code sets (and should set back)
        self._patch(torch, "use_deterministic_algorithms", make_setting("torch.use_deterministic_algorithms", "mode"))
        self._patch(torch, "set_default_dtype", make_setting("torch.set_default_dtype", "d"))

        # GradScaler's protocol (scale, unscale_, step, update); torch.cuda.amp's is a subclass.
        # Its step() calls unscale_() itself: only the caller's own calls are recorded.
        def make_scaler(kind):
            def make(original):
                def call(scaler, *args, **kwargs):
                    frame = tracer._caller()
                    if frame is not None:
                        info: dict = {"sid": id(scaler)}  # a fresh scaler may have the old one's name
                        opt = args[0] if args else kwargs.get("optimizer")
                        if kind in ("unscale", "scaler_step") and opt is not None:
                            # which optimizer: a scaler keeps a state per optimizer it steps
                            info["of"] = _name_of(opt, frame, "the optimizer", tracer.names)
                            info["opt"] = id(opt)
                            info["enabled"] = bool(scaler.is_enabled())
                        tracer._add(kind, _name_of(scaler, frame, "the scaler", tracer.names), **info)
                    return original(scaler, *args, **kwargs)

                _SEE_THROUGH.add(call.__code__)  # the optimizer step scaler.step makes is the caller's
                return call

            return make

        for attr, kind in SCALER_CALLS.items():
            self._patch(torch.amp.GradScaler, attr, make_scaler(kind))
        return self

    def uninstall(self) -> None:
        while self._undo:
            owner, attr, original, wrapper = self._undo.pop()
            if owner is None:
                original.remove()
            elif vars(owner).get(attr) is not wrapper:
                # Another tracer wrapped this one and is still installed (both roles in one
                # process): putting our original back would drop its wrapper, and its own
                # uninstall would put ours back for good. Ours stays, retired: it passes calls
                # through, and whoever restores it restores what it stood in front of.
                _retire(wrapper, original)
            else:
                original = _live(original)
                if original is _INHERITED:
                    delattr(owner, attr)
                else:
                    setattr(owner, attr, original)


def _idle_wrapper(frame, tracer) -> bool:
    """Whether ``frame`` is another tracer's wrapper while that tracer records nothing: with
    both roles in one process the learner's wrappers sit around the judge's, and a call the
    reference makes passes through them on its way here."""
    other = frame.f_locals.get("tracer")
    return isinstance(other, Tracer) and other is not tracer and other.side not in other.records


def _retire(wrapper, original) -> None:
    try:
        setattr(wrapper, _RETIRED, original)
    except (AttributeError, TypeError):
        pass


def _live(value):
    """``value``, or what it stood in front of when it is a retired wrapper (_INHERITED: the
    owner's class attribute, so the owner's own entry goes)."""
    while _RETIRED in getattr(value, "__dict__", {}):
        value = value.__dict__[_RETIRED]
    return value


def _onto_grads(t, limit: int = 10_000) -> bool | None:
    """Whether backward() from ``t`` reaches a leaf that already holds a gradient (None: the
    graph is too large to tell)."""
    try:
        stack, seen = [t.grad_fn], set()
        while stack:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            if len(seen) > limit:
                return None
            variable = getattr(node, "variable", None)  # an AccumulateGrad node: a leaf's
            if isinstance(variable, torch.Tensor) and variable.grad is not None:
                return True
            stack.extend(n for n, _ in node.next_functions)
    except Exception:
        return None
    return False


def _correction(args, kwargs) -> float:
    """Bessel's correction of a var/std call: 1 (unbiased, the default) or 0 (biased)."""
    if "correction" in kwargs and kwargs["correction"] is not None:
        return float(kwargs["correction"])
    if "unbiased" in kwargs:
        return 1.0 if kwargs["unbiased"] else 0.0
    for a in args:  # var(dim, unbiased) or var(unbiased)
        if isinstance(a, bool):
            return 1.0 if a else 0.0
    return 1.0


def _saved_kind(obj) -> str:
    if isinstance(obj, torch.nn.Module):
        return "module"
    if isinstance(obj, torch.optim.Optimizer):
        return "optimizer"
    if isinstance(obj, torch.Tensor):
        return "tensor"
    if isinstance(obj, dict):
        if obj and all(isinstance(v, torch.Tensor) for v in obj.values()):
            return "state_dict"
        if any(isinstance(v, (torch.nn.Module, torch.optim.Optimizer)) for v in obj.values()):
            return "dict holding objects"
        return "dict"
    return type(obj).__name__


def _target(f) -> str:
    return "file" if isinstance(f, (str, bytes, os.PathLike)) else "buffer"


def _probability_like(x, log: bool = False) -> str | None:
    """'probabilities' when rows of ``x`` are non-negative and sum to 1 (softmax output);
    for nll_loss, anything that is not log-probabilities (positive values), and
    log-probabilities taken down the columns (a log_softmax along dim 0)."""
    try:
        if not isinstance(x, torch.Tensor) or x.is_meta or x.dim() < 1 or not x.is_floating_point():
            return None
        with torch.no_grad():
            x = x.detach()
            one = torch.ones((), device=x.device)
            if log:
                if bool((x > 0).any()):
                    return "not log-probabilities"
                # a log_softmax over the batch (dim=0): each column's exp sums to 1, not each row's
                if x.dim() == 2 and x.shape[0] > 1 and x.shape[1] > 1:
                    p = x.exp()
                    if bool(torch.allclose(p.sum(0), one, atol=1e-4)) and not bool(
                        torch.allclose(p.sum(1), one, atol=1e-4)
                    ):
                        return "log-probabilities along dim 0"
                return None
            dim = 1 if x.dim() > 1 else 0
            if bool((x >= 0).all()) and bool(torch.allclose(x.sum(dim), one, atol=1e-4)):
                return "probabilities"
            # a softmax over the batch (dim=0): every column sums to 1 instead
            if (
                x.dim() > 1
                and x.shape[0] > 1
                and bool((x >= 0).all())
                and bool(torch.allclose(x.sum(0), one, atol=1e-4))
            ):
                return "probabilities along dim 0"
    except Exception:
        return None
    return None
