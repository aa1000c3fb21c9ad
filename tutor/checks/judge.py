"""The judge: decides a verdict from data, in a kernel that never runs learner code.

The judge kernel runs the exercise's setup and reference solution, holds the checks and
the expected values, and evaluates every check in its own interpreter. What it knows of the
learner's code comes from the learner's kernel as data (wire.py): the values of the
learner's names after setup and code ran (tensors with their layout and storage sharing,
arrays, numbers, strings, containers, module structure), the protocol trace, the error.
Where a check must call the learner's code (a function on generated inputs, a module's
forward, a setup helper that trains the learner's model), the judge holds a proxy
(``RemoteCallable``, or a module skeleton whose parameters are data and whose forward is
remote); calling it sends the judge's arguments as data and gets the result back as data.

Requests leave over the pipe to the learner's kernel (pipe.py), or, where the host does not
pipe the two kernels, through ``input()`` for the host to relay; either way the host says
when the learner's kernel is gone (a time-out, a crash). Nothing the learner's kernel sends
runs code here: it is decoded as data only (wire.py) and validated.
"""

import builtins
import contextlib
import functools
import importlib
import json
import re
from typing import Any

import torch

from . import origin, privates, setupnames, wire
from .context import Context
from .guard import Tampered
from .namespaces import (
    SOLUTION,
    BoundedOutput,
    CodeError,
    captured,
    new_namespace,
    run_code,
    run_reference_setup,
    seed_all,
)
from .pipe import End, Piped, listening
from .reads import Reads
from .trace import Event, Tracer

RESULT_MIME = "application/vnd.ptfund.verdict+json"
PROMPT = "ptfund-judge:"


class LearnerGone(BaseException):
    """The learner's kernel cannot answer any more (time limit, crash): no check can go on.

    A BaseException so that no check's ``except Exception`` reads it as the learner's error."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


class Client:
    """Asks the learner's kernel, through the host, and decodes its answers."""

    def __init__(self, ask=None, pipe: End | None = None):
        self._ask = ask or _ask_host
        self.pipe = pipe  # this kernel's end of the pipe, offered to the host with the first request
        self.tracer: Tracer | None = None
        self.ctx: Context | None = None
        self.world: str | None = None  # the world whose checks run now (its names come with each answer)
        self.changes = 0  # learner code may have changed the learner's names since this count
        self.pending_seed: int | None = None
        self.calls = 0
        # The names that came with the last answer (names_after): (self.changes then, world, answer).
        self.names_after: tuple[int, str, dict] | None = None
        self.ahead: list = []  # the worlds whose begins the learner's kernel runs ahead (run_ahead)

    def request(self, request: dict, header: dict | None = None) -> dict:
        text = self._send(request, header)
        try:
            decoded = wire.load(text, wire.Decoder(remote=self.remote, module_factory=skeleton))
        except wire.WireError as exc:
            return {"refused": f"your code's kernel sent something that is not data: {exc}"}
        if not isinstance(decoded, dict):
            return {"refused": "your code's kernel sent an answer of the wrong shape"}
        return decoded

    def _send(self, request: dict, header: dict | None) -> str:
        """The host's reply to ``request``, not yet decoded; LearnerGone for a fault."""
        # A plain header for the host, which relays the body without reading it.
        head = json.dumps(header or {"op": request.get("op"), "world": request.get("world")})
        text = head + "\n" + wire.encode(request, JudgePreparer())
        answer = self._ask(text)
        if isinstance(answer, str) and answer.startswith("pipe:") and self.pipe is not None:
            # The host connected the two kernels' ends: every request goes over the pipe now.
            self._ask = Piped(self.pipe, self._ask, answer[5:])
            answer = self._ask(text)
        if not isinstance(answer, str):
            raise LearnerGone("crashed", "no answer came back from the kernel running your code")
        if answer.startswith("fault:"):
            try:
                fault = json.loads(answer[6:])
            except ValueError:
                fault = {}
            raise LearnerGone(str(fault.get("status") or "crashed"), str(fault.get("message") or ""))
        if not answer.startswith("ok:"):
            raise LearnerGone("crashed", "the kernel running your code answered something that is not data")
        return answer[3:]

    def close(self) -> None:
        if self.pipe is not None:
            self.pipe.close()

    def run_ahead(self, requests: list) -> None:
        """Have the learner's kernel run these begins (the device run, further worlds) one
        after another, starting now, while this judge goes on; the host keeps each answer
        until ``ahead_answer`` asks for it. A world sent before is not sent again."""
        new = self._new_ahead(requests)
        if new:
            self._send({"op": "ahead", "requests": new}, {"op": "ahead", "count": len(new)})

    def run_ahead_then(self, requests: list, then: dict) -> dict:
        """``run_ahead(requests)`` and ``ahead_answer(then)`` (one of them) in one round trip."""
        new = self._new_ahead(requests)
        header: dict = {"op": "ahead-answer", "index": self.ahead.index(str(then.get("world")))}
        if not new:
            return self.request({"op": "ahead-answer"}, header)
        return self.request({"op": "ahead", "requests": new}, header | {"count": len(new)})

    def _new_ahead(self, requests: list) -> list:
        new = [r for r in requests if str(r.get("world")) not in self.ahead]
        self.ahead += [str(r.get("world")) for r in new]
        return new

    def ahead_answer(self, request: dict) -> dict:
        """The learner's answer to ``request``: from the runs ahead when it is one of them
        (the host holds it already or waits for it: no round trip to the learner's
        kernel), else asked for now."""
        world = str(request.get("world"))
        if world not in self.ahead:
            return self.request(request)
        return self.request({"op": "ahead-answer"}, {"op": "ahead-answer", "index": self.ahead.index(world)})

    def remote(self, record: dict):
        base = RemoteCallable if record.get("kind") in ("module", "callable") else RemoteObject
        return _remote_class(base, str(record.get("type") or ""))(self, record)

    def operate(self, op: str, target, **fields):
        request, segment, world = self._operation(op, target, fields)
        return self._operated(self.request(request), segment, world)

    def post(self, op: str, target, **fields) -> tuple:
        """Send an operation now and go on while the learner's kernel runs it (the host keeps
        its answer, as it keeps the begins run ahead); ``collect`` decodes it. Between the
        two the judge asks the learner's kernel nothing else."""
        request, segment, world = self._operation(op, target, fields)
        marker = f"posted {len(self.ahead)}"
        self.ahead.append(marker)
        # "calls": not a begin, so no more time for the learner's cell than a request gets
        self._send({"op": "ahead", "requests": [request]}, {"op": "ahead", "count": 1, "calls": True})
        return self.ahead.index(marker), segment, world

    def collect(self, posted: tuple):
        index, segment, world = posted
        answer = self.request({"op": "ahead-answer"}, {"op": "ahead-answer", "index": index})
        return self._operated(answer, segment, world)

    def _operation(self, op: str, target, fields: dict) -> tuple:
        segment = self.ctx.segment if self.ctx is not None else "run"
        request = {"op": op, "target": target, "segment": segment, **fields}
        if self.pending_seed is not None:
            request["seed"], self.pending_seed = self.pending_seed, None
        # The checks read the names again after a call, nearly always: they come with its answer.
        world = self.world
        if world is not None:
            request["names_after"] = world
        self.calls += 1
        self.changes += 1
        self.names_after = None
        return request, segment, world

    def _operated(self, answer: dict, segment, world):
        after = answer.pop("names_after", None)
        if world is not None and isinstance(after, dict):
            self.changes += 1  # reading them is a request of its own, as World.namespace counts it
            self.names_after = (self.changes, world, after)
        self._trace(segment, answer.get("trace"))
        if "tampered" in answer:
            raise Tampered(str(answer["tampered"]))
        if "refused" in answer:
            raise wire.WireError(str(answer["refused"]))
        if "raised" in answer:
            raised = answer["raised"]
            raise raised if isinstance(raised, wire.Raised) else wire.Raised({})
        origin.mark(answer.get("value"))
        for one in answer.get("answers") or ():  # a batch of calls
            if isinstance(one, dict):
                origin.mark(one.get("value"))
        return answer

    def _trace(self, segment, events) -> None:
        if self.tracer is None or not isinstance(events, list):
            return
        kept = self.tracer.traces.setdefault(("learner", segment), [])
        self.tracer.ran.add(("learner", segment))
        for event in events:
            if isinstance(event, list) and len(event) == 3 and isinstance(event[2], dict):
                kept.append(Event(str(event[0]), str(event[1]), event[2]))


def _ask_host(text: str) -> str:
    return builtins.input(PROMPT + text)


class JudgePreparer(wire.Preparer):
    """The judge sends data, and the learner's own objects back as the handles it gave."""

    def handle(self, obj, kind: str) -> dict:
        raise wire.WireError(f"a check passes {wire._type_name(obj)} to your code, which is not data")

    def __call__(self, value, depth: int = 0):
        if isinstance(value, _Remote):
            return object.__getattribute__(value, "_record")
        if isinstance(value, LearnerModule):
            return object.__getattribute__(value, "_remote")._record
        if type(value) is torch.Tensor or type(value) is torch.nn.Parameter:
            ref = wire.learner_ref(value)
            if ref is not None:  # the learner's own tensor goes back as itself, not as a copy
                return {wire.TAG: "handle", "id": ref, "kind": "object", "type": "Tensor"}
        return super().__call__(value, depth)


class _Remote:
    """An object that lives in the learner's kernel; every use is a request."""

    __slots__ = ("_client", "_record")

    def __init__(self, client: Client, record: dict):
        self._client = client
        self._record = record

    @property
    def learner_type(self) -> str:
        return str(self._record.get("type") or "object")

    @property
    def learner_class(self) -> str | None:
        """The name of the learner's nn.Module class this stands for, if it is one."""
        if self._record.get("is_class") and self._record.get("module_class"):
            return str(self._record.get("name") or "Module")
        return None

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self._client.operate("getattr", self, name=name)["value"]

    def __iter__(self):
        return iter(self._client.operate("iter", self)["value"])

    def __len__(self) -> int:
        return int(self._client.operate("len", self)["value"])

    def __getitem__(self, key):
        return self._client.operate("getitem", self, key=key)["value"]

    def __contains__(self, key) -> bool:
        return bool(self._client.operate("contains", self, key=key)["value"])

    def __bool__(self) -> bool:
        return bool(self._client.operate("bool", self)["value"])

    def __repr__(self) -> str:
        name = self._record.get("name")
        return f"<{self.learner_type} {name}>" if name else f"<{self.learner_type} object>"


class RemoteObject(_Remote):
    __slots__ = ()


@functools.lru_cache(maxsize=256)
def _remote_class(base: type, learner_type: str) -> type:
    """``base`` under the name of the learner's type, so that a check's ``type(x).__name__``
    says what the learner's object is (``BytesIO``), not what stands for it here."""
    parts = learner_type.split(".")
    if len(learner_type) > 200 or not all(part.isidentifier() for part in parts):
        return base
    module, name = ".".join(parts[:-1]), parts[-1]  # "_io.BytesIO": BytesIO of module _io
    return type(name, (base,), {"__slots__": (), "__module__": module or base.__module__})


def _calls_request(calls: list) -> list:
    return [{"args": list(a), "backward": b, "seed": s, "call": n[0] if n else None} for a, b, s, *n in calls]


class RemoteCallable(_Remote):
    __slots__ = ()

    def __call__(self, *args, **kwargs):
        return self._client.operate("call", self, args=list(args), kwargs=dict(kwargs))["value"]

    def call_many(self, calls: list) -> list:
        """Several calls in one round trip, in order: ``calls`` holds (args, backward, seed[, call]);
        each answer holds the value or what was raised, the arguments after the call and,
        when a gradient was sent, what backpropagating it gave."""
        return self._answers(self._client.operate("calls", self, calls=_calls_request(calls)), len(calls))

    def post_many(self, calls: list) -> tuple:
        """``call_many``'s request, sent now: the judge goes on (running the reference on the
        same cases) while the learner's kernel calls; ``answers_of`` waits for the answers."""
        return len(calls), self._client.post("calls", self, calls=_calls_request(calls))

    def answers_of(self, posted: tuple) -> list:
        count, sent = posted
        return self._answers(self._client.collect(sent), count)

    @staticmethod
    def _answers(answer: dict, count: int) -> list:
        out = []
        for one in answer.get("answers") or []:  # decoded with the answer: one load for all
            if not isinstance(one, dict):
                raise wire.WireError("your code's kernel sent an answer of the wrong shape")
            if "raised" in one and not isinstance(one["raised"], wire.Raised):
                one["raised"] = wire.Raised({})
            out.append(one)
        if len(out) != count:
            raise wire.WireError("your code's kernel answered a different number of calls than were made")
        return out

    def parameter_names(self) -> list:
        params = self._record.get("params") or []
        return [p[0] for p in params if isinstance(p, list) and p and p[1] != "KEYWORD_ONLY" and p[1] != "VAR_KEYWORD"]


# ------------------------------------------------------------------ modules


class LearnerModule(torch.nn.Module):
    """A learner's module as data: its parameters, buffers, submodules and flags are real
    tensors and values here; calling it (or its other methods) runs the learner's own."""

    _LOCAL = frozenset(
        {
            "parameters",
            "named_parameters",
            "buffers",
            "named_buffers",
            "children",
            "named_children",
            "modules",
            "named_modules",
            "state_dict",
            "get_parameter",
            "get_buffer",
            "get_submodule",
            "extra_repr",
        }
    )

    def __call__(self, *args, **kwargs):
        return object.__getattribute__(self, "_remote")(*args, **kwargs)

    def forward(self, *args, **kwargs):
        return object.__getattribute__(self, "_remote").forward(*args, **kwargs)

    def __getattr__(self, name: str):
        try:
            return torch.nn.Module.__getattr__(self, name)
        except AttributeError:
            if name.startswith("__"):
                raise
            remote = self.__dict__.get("_remote")
            if remote is None:
                raise
            return getattr(remote, name)

    def __getattribute__(self, name: str):
        # Methods that change or run the module act on the learner's own (then the names
        # are read again); reading structure stays here, on data.
        if (
            not name.startswith("_")
            and name not in LearnerModule._LOCAL
            and name not in ("training", "remote_hooks", "forward")
            and callable(getattr(torch.nn.Module, name, None))
        ):
            remote = object.__getattribute__(self, "__dict__").get("_remote")
            if remote is not None:
                return getattr(remote, name)
        return object.__getattribute__(self, name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(…)"


_classes: dict = {}


def _torch_class(qualified: str):
    module, _, name = qualified.rpartition(".")
    if not module.startswith("torch."):
        return None
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None
    return cls if isinstance(cls, type) and issubclass(cls, torch.nn.Module) else None


def skeleton(record: dict, remote):
    """A LearnerModule of a class named like the learner's (so ``type(m).__name__`` reads
    the same), deriving from the torch class it derives from (so ``isinstance(m, nn.Linear)``
    holds), with its fields filled from the record by the decoder."""
    name = str(record.get("cls") or "Module")
    base: type = _torch_class(str(record.get("base") or "")) or torch.nn.Module
    key = (name, base)
    cls: Any = _classes.get(key)
    if cls is None:
        short = name.rsplit(".", 1)[-1] or "Module"
        cls = type(short, (LearnerModule, base), {"__module__": name.rpartition(".")[0] or "__main__"})
        cls.__qualname__ = short
        _classes[key] = cls
    module = cls.__new__(cls)
    torch.nn.Module.__init__(module)
    module.__dict__["_remote"] = remote
    return module


# ------------------------------------------------------------------ worlds


class World:
    """The learner's namespace in one world, as the judge sees it; read again after any
    request that ran the learner's code (it may have changed the names)."""

    def __init__(self, client: Client, name: str, names):
        self.client = client
        self.name = name
        self._names = _scope_names(names)
        self._at = client.changes

    def namespace(self) -> dict:
        if self.client.changes != self._at:
            after = self.client.names_after
            if after is not None and after[0] == self.client.changes and after[1] == self.name:
                answer = after[2]  # read right after the last request, and nothing ran since
            else:
                answer = self.client.request({"op": "names", "world": self.name})
                self.client.changes += 1
            self.client.names_after = None
            self._at = self.client.changes
            if "names" not in answer and _written_here(self._names):
                # "same", but a check wrote the copies decoded then: they do not stand.
                answer = self.client.request({"op": "names", "world": self.name, "fresh": True})
            if "names" in answer:  # else "same": they cross as last read, what was decoded then stands
                self._names = _scope_names(answer["names"])
        return self._names


def _written_here(value, depth: int = 0) -> bool:
    """Whether the judge's decoded copy ``value`` may have been written since it was decoded:
    a tensor whose version counter moved, any array (arrays keep no counter)."""
    if depth > wire.MAX_DEPTH:
        return True
    if isinstance(value, torch.Tensor):
        f = wire.facts(value)
        return f is None or wire.version_counter(value) != f.get("local_version")
    if isinstance(value, LearnerModule):
        return any(_written_here(t, depth + 1) for t in [*value.parameters(), *value.buffers()])
    if isinstance(value, dict):
        return any(_written_here(item, depth + 1) for item in value.values())
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(_written_here(item, depth + 1) for item in value)
    return type(value).__module__ == "numpy" and hasattr(value, "flags")


_MODULES = frozenset({"torch", "np", "nn", "F"})  # always the judge's own imports
_PROTECTED = frozenset(dir(builtins)) | _MODULES


def _scope_names(names) -> dict:
    """The learner's names a check may see: torch, np, nn and F are never the learner's
    (a check's ``torch`` is torch, whatever the learner bound to it); a builtin's name is
    the learner's only when bound to data, never to a function or object of its own."""
    if not isinstance(names, dict):
        return {}
    out = {}
    for key, value in names.items():
        if not isinstance(key, str):
            continue
        if key in _MODULES or (
            key in _PROTECTED and (isinstance(value, (_Remote, wire.Opaque)) or type(value).__name__ == "module")
        ):
            continue
        out[key] = value
    return out


def code_error_from(data) -> CodeError | None:
    if not isinstance(data, dict):
        return None
    line = data.get("line")
    stopped = data.get("stopped_line")
    return CodeError(
        stage=str(data.get("stage") or "code"),
        ename=str(data.get("ename") or "Exception"),
        evalue=str(data.get("evalue") or ""),
        line=line if isinstance(line, int) else None,
        traceback=[str(x) for x in data.get("traceback") or []][:200],
        stopped_line=stopped if isinstance(stopped, int) else None,
        syntax=bool(data.get("syntax")),
        context=data.get("context") if isinstance(data.get("context"), dict) else None,
    )


# ------------------------------------------------------------------ the verification


def judge(request: str, blob: str) -> dict:
    """The judge cell's entry point: decide, then publish the result for the host."""
    from .report import dumps

    payload = json.loads(blob)
    if not _BASELINE:  # as this kernel was before its first verification
        _BASELINE.append(process_state())
    client = Client(pipe=listening(payload.get("pipe")))
    try:
        result = run(payload, client)
    finally:
        client.close()
        wire.FACTS.clear()
    # Said beside the result (not in it): whether this kernel may judge another exercise next.
    clean = same_process_state(_BASELINE[0], process_state())
    try:
        from IPython import get_ipython

        shell = get_ipython()
    except ImportError:
        shell = None
    if shell is not None:
        bundle = {"request": request, "body": dumps(result), "clean": clean}
        shell.display_pub.publish(data={RESULT_MIME: bundle}, metadata={})
    return result


_BASELINE: list = []  # process_state() before this kernel's first verification


def process_state() -> tuple:
    """What an exercise's setup or solution could leave behind in this process for the next
    exercise's reference: torch's global switches, and the objects bound in torch, its
    Tensor, Module and functional namespaces and builtins (a patch shows as another object).
    A batch keeps a judge for another exercise only while this stays the same."""
    import builtins as b

    get_device = getattr(torch, "get_default_device", None)
    switches = (
        torch.is_grad_enabled(),
        torch.get_default_dtype(),
        get_device() if get_device else None,
        torch.are_deterministic_algorithms_enabled(),
        torch.get_num_threads(),
        torch.is_anomaly_enabled(),
    )
    spaces = [dict(vars(space)) for space in (torch, torch.Tensor, torch.nn.Module, torch.nn.functional, b)]
    spaces[-1].pop("input", None)  # the kernel binds its own for each cell
    return switches, spaces


def same_process_state(before: tuple, after: tuple) -> bool:
    if before[0] != after[0]:
        return False
    for old, new in zip(before[1], after[1], strict=True):
        if old.keys() != new.keys() or any(new[key] is not value for key, value in old.items()):
            return False
    return True


def run(payload: dict, client: Client) -> dict:
    from .runner import evaluate

    setup = payload.get("setup") or ""
    code = payload.get("code") or ""
    solution = payload.get("solution") or ""
    seed = int(payload.get("seed") or 0)
    device = torch.device(payload.get("device") or "cpu")
    # The learner's kernel traces the learner's calls and sends them; this one records the reference's.
    tracer = Tracer(records=("ref",)).install() if payload.get("trace", True) else None
    client.tracer = tracer
    try:
        quiet = BoundedOutput(limit=0)
        ref_reads = Reads()
        ref, setup_error, solution_error = _reference(
            setup,
            solution,
            seed,
            device,
            quiet,
            tracer,
            ref_reads,
            payload.get("judge_setup") or "",
            setupnames.of_payload(payload),
        )
        # What the learner's kernel runs after the main world, if the checks get that far:
        # the device run, then each further world. Asked for now, run while the checks run.
        meta = {
            "op": "begin",
            "world": "meta",
            "device": "meta",
            "setup": setup,
            "code": code,
            "seed": seed,
            "track_generators": True,
            "module": payload.get("module"),
            "keep_setup": setupnames.of_payload(payload),
        }
        worlds = [spec for spec in payload.get("worlds") or [] if isinstance(spec, dict)]
        further = [_world_request(payload, spec, number, device) for number, spec in enumerate(worlds, 2)]
        try:
            # The host ran it already. It is told how often the learner's code will run again
            # (the device run, further worlds: each gets the exercise's time), and where this
            # kernel's end of the pipe listens.
            header = {"op": "begin", "world": "main", "runs": len(further) + int(bool(payload.get("device_run")))}
            if client.pipe is not None:
                header["pipe"] = client.pipe.port
            begun = client.request({"op": "begin", "world": "main"}, header)
        except LearnerGone as gone:
            return _gone(gone)
        if setup_error is None and begun.get("setup_error"):
            setup_error = code_error_from(begun.get("setup_error"))
        if "refused" in begun:
            return _failed(str(begun["refused"]))
        if begun.get("tampered"):
            return _failed(_as_compile_workers(str(begun["tampered"]), code))
        shadowed = _shadowed_helpers(begun.get("rebound"), payload)
        if shadowed:
            return _failed(
                f"Your code replaced the exercise's own helper {shadowed[0]}, which the checks call; they use the "
                "exercise's helpers as the setup defined them, so this attempt fails. Solve the exercise without "
                "redefining it."
            )
        read = _rebound_reads(begun.get("rebound_names"), payload, setup)
        if read:
            return _failed(
                f"Your code binds {read[0]} to another object, and the exercise's own helpers read {read[0]} when "
                "the checks call them, so they would check your object in place of the exercise's: this attempt "
                f"fails. Leave {read[0]} bound to what the setup made, and give what you make a name of your own."
            )
        touched = _touches_setup_state(payload, setup, code)
        if touched:
            return _failed(touched)
        client._trace("run", begun.get("trace"))
        code_error = code_error_from(begun.get("error"))
        world = World(client, "main", begun.get("names") or {})
        ctx = Context(world, ref, device, seed, code_error, solution_error)
        client.ctx, client.world = ctx, world.name
        ctx.tracer = tracer
        ctx.code, ctx.solution = code, solution
        ctx.untouched = {n for n in begun.get("untouched") or [] if isinstance(n, str)}
        ctx.kept = {n for n in begun.get("kept") or [] if isinstance(n, str)}
        ctx.reads = {"ref": ref_reads}  # the learner's kernel keeps the learner's own

        def device_run():
            # The main world passed: the further worlds are needed now too. The learner's
            # kernel runs them one after another while this judge checks each.
            answer = client.run_ahead_then([meta, *further], meta)
            _answers_world(answer, "meta")
            if "setup_error" in answer or "refused" in answer or "names" not in answer:
                return None
            return code_error_from(answer.get("error")), World(client, "meta", answer["names"]), wire.origin_of

        try:
            if payload.get("device_run") and device.type == "cpu" and code_error is None and setup_error is None:
                # The device run is cheap (meta tensors hold no data): it runs while the main
                # world is checked, wasted only if those checks fail.
                client.run_ahead([meta])
            result = evaluate(payload, ctx, setup_error, quiet, device_run=device_run)
            # A pass must hold on other data too: each further world runs setup (and the
            # exercise's variant) again with another seed, the reference and the learner's
            # code on it, and every check once more.
            alike: list = []
            for number, spec in enumerate(worlds, 2):
                if not result.get("passed"):
                    break
                client.run_ahead(further)  # unless the device run sent them already
                begin = functools.partial(client.ahead_answer, further[number - 2])
                result = _in_world(payload, begin, client, spec, number, device, quiet, ref, alike) or result
            if result.get("passed") and alike and all(alike):
                result["worlds_alike"] = True
            hidden = (
                _hides_a_name(payload, setup, code) or _writes_torch_state(setup, code)
                if result.get("passed")
                else None
            )
            return _failed(hidden) if hidden else result
        except LearnerGone as gone:
            return _gone(gone)
        except Tampered as exc:
            return _failed(_as_compile_workers(str(exc), code))
    finally:
        if tracer is not None:
            tracer.uninstall()


def _reference(
    setup: str,
    solution: str,
    seed: int,
    device,
    quiet,
    tracer=None,
    reads=None,
    judge_setup: str = "",
    keep: list | None = None,
):
    """The reference namespace of one world: setup, the judge setup, then the solution, with
    ``seed`` (what it reads out of tensors recorded in ``reads``, for the device run);
    ``keep``: the names whose setup binding checks read (setupnames.py)."""
    ref = new_namespace(device)
    with captured(quiet), reads.recording() if reads is not None else _null():  # its prints would give the answer away
        seed_all(seed)
        setup_error = run_reference_setup(setup, ref, judge_setup, keep or ())
        solution_error = None
        if setup_error is None:
            with tracer.recording("ref") if tracer is not None else _null():
                solution_error = run_code(solution, ref, SOLUTION, "solution")
    return ref, setup_error, solution_error


def _world_request(payload: dict, spec: dict, number: int, device) -> dict:
    """The learner's begin in world ``number``: the world's setup and seed, the same code."""
    from .runner import world_setup

    setup, seed, _ = world_setup(payload, spec)
    code = payload.get("code") or ""
    return {
        "op": "begin",
        "world": f"world-{number}",
        "setup": setup,
        "code": code,
        "seed": seed,
        "device": str(device),
        "module": payload.get("module"),
        "keep_setup": setupnames.of_payload(payload),
    }


def _in_world(
    payload: dict, begin, client: Client, spec: dict, number: int, device, quiet, first: dict, alike: list
) -> dict | None:
    """The verification again in world ``number`` (``begin()``: the learner's answer to its
    begin): None when it passes there too, else the failing result, each failure said to be
    on other data."""
    from .runner import INPUT_SHIFT, broken_in_world, evaluate, on_other_data, world_setup, worlds_alike

    setup, seed, variant = world_setup(payload, spec)
    code, solution = payload.get("code") or "", payload.get("solution") or ""
    ref, setup_error, solution_error = _reference(
        setup,
        solution,
        seed,
        device,
        quiet,
        judge_setup=payload.get("judge_setup") or "",
        keep=setupnames.of_payload(payload),
    )
    alike.append(worlds_alike(first, ref, list(payload.get("checks") or [])))
    name = f"world-{number}"
    begun = begin()
    _answers_world(begun, name)
    if "refused" in begun:
        return _failed(str(begun["refused"]))
    if begun.get("tampered"):
        return _failed(str(begun["tampered"]))
    if setup_error is None and begun.get("setup_error"):
        setup_error = code_error_from(begun.get("setup_error"))
    learner = World(client, name, begun.get("names") or {})
    ctx = Context(learner, ref, device, seed, code_error_from(begun.get("error")), solution_error)
    ctx.code, ctx.solution = code, solution
    ctx.input_shift = INPUT_SHIFT * (number - 1)
    client.ctx, client.world = ctx, learner.name
    result = evaluate({**payload, "device_run": False}, ctx, setup_error, quiet)
    if result.get("passed"):
        return None
    if setup_error is not None or solution_error is not None:
        # The exercise's own code failed on that data: nothing to say about the learner's.
        return broken_in_world(result, seed, variant, number)
    return on_other_data(result, seed, variant, number, payload)


_RUNS = {"meta": "the device run (your code again, on the meta device)", "main": "the run of your code"}


def _answers_world(answer: dict, world: str) -> None:
    """Tampered unless ``answer`` says it is the learner's run in ``world``: the learner's
    kernel names the run each begin answers (learner.py), so an answer given again to
    another request (code that took over what answers the checker and repeats an earlier
    answer) is told as what it is, not judged as that run's values."""
    said = answer.get("world")
    if said == world or "refused" in answer or "tampered" in answer:
        return
    asked = _RUNS.get(world) or f"the run on other data ({world})"
    other = f" ({_RUNS.get(said) or said})" if isinstance(said, str) and said else ""
    raise Tampered(
        f"The kernel running your code answered the checker's request for {asked} with the answer to another "
        f"of its requests{other}: your code took over what answers the checker, so this attempt fails."
    )


def _shadowed_helpers(rebound, payload: dict) -> list:
    """The setup's helpers the learner's code rebound that a check or mistake names."""
    if not isinstance(rebound, list):
        return []
    named: set = set()

    def walk(value):
        if isinstance(value, str):
            named.update(_IDENTIFIER.findall(value))
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(payload.get("checks"))
    walk([mk.get("when") for mk in payload.get("mistakes") or [] if isinstance(mk, dict)])
    return sorted(name for name in rebound if isinstance(name, str) and name in named)


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _as_compile_workers(sentence: str, code: str) -> str:
    """The guard's sentence about a thread left running, said as what started it where the
    code compiles with torch.compile's default backend (inductor), whose compile workers are
    threads of its own: the code started no thread itself, so "join the threads you start"
    would be no advice."""
    if "left a background thread running" not in sentence or not _compiles_with_inductor(code):
        return sentence
    threads = sentence.partition("(")[2].partition(")")[0]
    return (
        f"Your code's torch.compile runs with the default backend, inductor, which left its compile workers "
        f"running ({threads}) when the checks called your code; a result that another thread can change cannot "
        'be trusted, so this attempt fails. Pass the backend the exercise asks for (backend="eager" or '
        '"aot_eager"), which compiles in your code\'s own thread.'
    )


def _compiles_with_inductor(code: str) -> bool:
    """Whether ``code`` calls ``compile(...)`` (torch.compile) with no backend, or backend "inductor"."""
    import ast

    try:
        tree = ast.parse(code or "")
    except (SyntaxError, ValueError):
        return False
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if name != "compile" or (isinstance(node.func, ast.Attribute) and getattr(node.func.value, "id", "") == "re"):
            continue
        if isinstance(node.func, ast.Name) and len(node.args) >= 3:
            continue  # Python's own compile(source, filename, mode)
        backend = next((k.value for k in node.keywords if k.arg == "backend"), None)
        if backend is None and len(node.args) < 4:
            return True
        if isinstance(backend, ast.Constant) and backend.value == "inductor":
            return True
    return False


def _every_setup(payload: dict, setup: str) -> list[str]:
    """The main world's setup and each further world's (with its variant)."""
    from .runner import world_setup

    return [setup] + [world_setup(payload, spec)[0] for spec in payload.get("worlds") or [] if isinstance(spec, dict)]


def _rebound_reads(rebound, payload: dict, setup: str) -> list:
    """The setup's names the learner's code bound to other objects that the setup's own
    functions read when called (privates.read_when_called): a check that calls such a
    helper would run it on the learner's object. Not the names the reference solution
    binds itself: making those is the exercise."""
    if not isinstance(rebound, list) or not rebound:
        return []
    read = privates.read_when_called(*_every_setup(payload, setup)) - privates.bound_at_module_level(
        payload.get("solution") or ""
    )
    return sorted(name for name in rebound if isinstance(name, str) and name in read)


def _setup_state(payload: dict, setup: str) -> privates.Privates:
    """The private names and attributes the setup of every world keeps, where a check reads
    anything the setup binds: checks that read only the learner's names (and data made
    from them) run none of the setup's code, so its state decides no verdict of theirs (a
    lesson's prelude keeps a record for some of its exercises only)."""
    setups = _every_setup(payload, setup)
    state = privates.of_setup(*setups)
    if state.names or state.attributes:
        bound = frozenset().union(
            *(privates.bound_at_module_level(s) - privates.imported_at_module_level(s) for s in setups)
        )
        if not privates.names_in_checks(payload.get("checks") or []) & bound:
            state = privates.Privates(frozenset(), frozenset())
    if setupnames.of_payload(payload):  # the setup's bindings, kept in the learner's kernel for the checks
        state = privates.Privates(state.names | {setupnames.SETUP_NAME}, state.attributes)
    return state


def _touches_setup_state(payload: dict, setup: str, code: str) -> str | None:
    """A sentence where the learner's code names the setup's private state (privates.py)."""
    state = _setup_state(payload, setup)
    found = privates.reached(code, state)
    if found is not None:
        name, line = found
        return (
            f"Your code reaches {name} (line {line}), the exercise's own state that its checks read, so this attempt "
            "fails: solve the exercise without touching the setup's private names."
        )
    # Where the setup keeps such state, reaching objects through the interpreter finds it
    # without a name; where it keeps none, every check reads data and no rule is needed.
    found = privates.internals(code) if state.names or state.attributes else None
    if found is None:
        return None
    name, line = found
    return (
        f"Your code uses {name} (line {line}), which reaches objects through the interpreter (closures, frames, "
        "the garbage collector, raw memory, tracing hooks) rather than by name; that is how the exercise's own "
        "state, which its checks read, is found, so this attempt fails: solve the exercise without it."
    )


def _hides_a_name(payload: dict, setup: str, code: str) -> str | None:
    """A sentence where a passing attempt looks a name up by text computed at run time, or runs
    text or a pickle as code, and the setup keeps state its checks read: the rules above read
    literal text, so such an attempt may have reached that state unseen (privates.py)."""
    state = _setup_state(payload, setup)
    found = privates.runtime_routes(code) if state.names or state.attributes else None
    if found is None:
        return None
    what, line = found
    return (
        f"Your code uses {what} (line {line}): it looks names up by text made at run time, or runs text or a "
        "pickle as code, and this exercise's checks read state that your code's kernel keeps, which that could "
        "reach unseen. So this attempt fails although its checks passed: name what you use in your code (or load "
        "with weights_only=True)."
    )


def _writes_torch_state(setup: str, code: str) -> str | None:
    """A sentence where a passing attempt changes state kept in torch's private modules
    (torch.compile's counters, which a check reads after calling the learner's function): no
    exercise needs it, and the checks that read it cannot tell it from torch's own counting."""
    found = privates.torch_state_writes(code, setup)
    if found is None:
        return None
    path, line = found
    return (
        f"Your code changes {path} (line {line}), state kept in torch's private modules, which some checks read "
        "(torch.compile's counters): no exercise needs it changed, so this attempt fails although its checks "
        "passed: leave torch's private state to torch."
    )


# A trivial exercise a spare kernel verifies in both roles while it waits (rehearse).
REHEARSAL = {
    "setup": "import torch\na = torch.arange(6.0, device=DEVICE).reshape(2, 3)\n",
    "code": "t = a.t()\n",
    "solution": "t = a.t()\n",
    "seed": 0,
    "checks": [
        {
            "id": "t",
            "kind": "tensor",
            "expr": "t",
            "compare": ["shape", "dtype", "stride", "values"],
            "shares_storage_with": "a",
        },
        {"id": "sum", "kind": "value", "expr": "a.sum().item()", "expected": "15.0"},
    ],
    "mistakes": [],
    "device": "cpu",
    "device_run": True,
    "time_limit": 20.0,
    "worlds": [{"seed": 1}],
}


def rehearse() -> bool:
    """Verify REHEARSAL here, both roles (run_local), before this kernel has a role: a kernel
    forked from the fork server shares its pages until it writes them, and a verification's
    first pass writes thousands (reference counts: the tamper guard's snapshot of torch and
    builtins alone faults in about a thousand, tens of milliseconds), as do first calls. A
    spare pays that while it waits instead of inside a learner's verification. True if the
    rehearsal passed. The random generators are left as they were: the kernel is still to
    start as a new process does, whatever the rehearsal seeded."""
    import random

    import numpy as np

    states = (torch.get_rng_state(), np.random.get_state(), random.getstate())
    try:
        return bool(run_local(json.loads(json.dumps(REHEARSAL))).get("passed"))
    finally:
        torch.set_rng_state(states[0])
        np.random.set_state(states[1])
        random.setstate(states[2])


def run_local(payload: dict) -> dict:
    """Both roles in this one process, the requests still crossing as data (wire.py): how
    the check library's own tests exercise the judge without kernels. Not a boundary: the
    learner's code here could reach the judge (the engine keeps them in two kernels)."""
    from . import learner

    learner.reset()
    first = {
        "op": "begin",
        "world": "main",
        "setup": payload.get("setup") or "",
        "code": payload.get("code") or "",
        "seed": int(payload.get("seed") or 0),
        "device": payload.get("device") or "cpu",
        "module": payload.get("module"),
        "keep_setup": setupnames.of_payload(payload),
    }

    import contextlib
    import sys

    streams = (sys.stdout, sys.stderr)  # the learner's side runs with its own streams, as in a kernel

    ahead: list = []  # begins the host would have the learner's kernel run ahead: run when asked for here

    def ask(prompt: str) -> str:
        header, _, body = prompt.partition("\n")
        head = json.loads(header)
        with contextlib.redirect_stdout(streams[0]), contextlib.redirect_stderr(streams[1]), _without_modes():
            if head.get("op") == "begin" and head.get("world") == "main":
                return "ok:" + learner.respond(lambda: learner._answer(first))
            if head.get("op") == "ahead":
                ahead.extend(learner.decode(body).get("requests") or [])
                return "ok:"
            if head.get("op") == "ahead-answer":
                if head.get("count") is not None:
                    ahead.extend(learner.decode(body).get("requests") or [])
                return "ok:" + learner.respond(lambda: learner._answer(ahead[head["index"]]))
            return "ok:" + learner.respond(lambda: learner._answer(learner.decode(body)))

    try:
        return run(payload, Client(ask))
    finally:
        wire.FACTS.clear()
        learner.reset()


@contextlib.contextmanager
def _without_modes():
    """The judge's torch function modes (the device run's) set aside while the learner's side
    answers in this same process: in a kernel of its own it would not have them."""
    from torch.overrides import _pop_mode_temporarily

    with contextlib.ExitStack() as stack:
        while torch._C._len_torch_function_stack() > 0:
            stack.enter_context(_pop_mode_temporarily())
        yield


class _null:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def _failed(sentence: str) -> dict:
    return {"passed": False, "error": None, "checks": [], "mistakes": [], "tampered": sentence}


def _gone(gone: LearnerGone) -> dict:
    return {"passed": False, "error": None, "checks": [], "mistakes": [], "fault": gone.status, "message": gone.message}
