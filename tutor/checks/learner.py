"""The learner's side of a verification: runs setup and the learner's code, answers the judge.

This module runs in the learner's kernel and holds nothing that decides a verdict: no
reference solution, no check, no expected value, no key. It answers with data only
(wire.py). In a kernel the whole verification is one cell (``begin``): each request
arrives as a frame on the pipe and its answer, naming it, leaves as one (pipe.py); where
the host relays instead, the answer leaves as that cell's ``input()`` prompt and the host's
reply is the judge's next request (the stdin channel: no cell, no output message per request).
Where no prompt can be sent, each request is a cell of its own (``serve(request_id,
text)``) and each answer a display bundle of ``ANSWER_MIME`` that names the request.

Requests (decoded with wire.load, so the judge's inputs arrive as plain data):
- ``begin``: seed, run setup, then the learner's code (traced), in the namespace of a
  *world*; answers the error, what the tamper guard saw, the trace and every name's value;
- ``names``: every name's value again (after calls that may have changed them);
- ``call`` / ``getattr`` / ``iter`` / ``len`` / ``getitem`` / ``repr`` / ``bool`` / ``contains``:
  an operation on an object the judge holds a handle to (a function, a module, an optimizer),
  with arguments the judge chose; a call can also backpropagate a gradient the judge chose
  and return its arguments afterwards (to see what the call changed);
- ``calls``: a function check's cases, one call each, in order, in one request.
Anything the learner's code does to this module only changes the learner's own answers.
"""

import builtins
import sys
import types
import weakref
from typing import Any

import torch

from . import setupnames, untouched, wire, writes
from .guard import Snapshot, Tampered, scan
from .namespaces import (
    SETUP,
    YOUR_CODE,
    BoundedOutput,
    captured,
    new_namespace,
    run_code,
    seed_all,
    torch_state_guard,
)
from .pipe import ANSWER_PROMPT, listening  # heads each answer, as the prompt of the loop's input() or a frame
from .reads import Reads
from .trace import Tracer

ANSWER_MIME = "application/vnd.ptfund.answer+json"
_publish_target = None

# One verification per kernel: the kernel is thrown away afterwards.
_state: dict = {"worlds": {}, "handles": {}, "tracer": None, "guard": None, "bound": {}}
LIBRARY: dict | None = None  # the private copy of the library this module belongs to (set by __init__)
_MAX_ITEMS = 10_000


def _publisher():
    global _publish_target
    if _publish_target is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return None
        shell = get_ipython()
        _publish_target = shell.display_pub.publish if shell is not None else None
    return _publish_target


def begin(request_id: str, blob: str) -> None:
    """Run setup and the learner's code (the first cell: the host sends it as JSON, since
    it holds only text and numbers: setup, code, seed, device); with ``"loop"``, then
    answer every further request in this same cell."""
    import json

    request = json.loads(blob)
    ask = _asker() if request.get("loop") else None
    if ask is None:
        _reply(request_id, lambda: _answer(request))
        return
    pipe = listening(request.get("pipe"))  # None: every answer through the host's prompts
    try:
        answer = respond(lambda: _answer(request))
        if pipe is None:
            _serve(ask, ask, request_id, ask(f"{ANSWER_PROMPT}{request_id}\n{answer}"))
        # Over the pipe (pipe.py): the host is told the port once the code has run (the
        # checks' calls of it get more time then); a reply means the judge has decided. The
        # host connects once the judge has run the reference, however long that takes.
        elif not ask(f"{ANSWER_PROMPT}{request_id} pipe {pipe.port}\n") and pipe.accept(wait=None):
            _serve(pipe.ask, pipe.tell, request_id, pipe.ask(f"{ANSWER_PROMPT}{request_id}\n{answer}"))
    except OSError:
        return  # the pipe was cut (the judge decided, or the host ended the verification)
    finally:
        if pipe is not None:
            pipe.close()


def _serve(ask, tell, request_id: str, text: str) -> None:
    """Answer each request (``text`` is the first) until the judge has decided. ``ask``
    sends an answer and waits for the next request; ``tell`` sends one of a batch's
    answers without waiting ("stop" once the judge has decided)."""
    while True:
        request_id, newline, text = text.partition("\n")
        if not newline:  # the host's "end": the judge has decided
            return
        try:
            asked: Any = decode(text)
        except wire.WireError as exc:
            asked = exc
        if isinstance(asked, dict) and asked.get("op") == "ahead":
            reply = _run_ahead(ask, tell, request_id, asked.get("requests"))
            if reply is None:
                return
            text = reply
            continue
        text = ask(f"{ANSWER_PROMPT}{request_id}\n{respond(lambda asked=asked: _answer(asked))}")


def _run_ahead(ask, tell, request_id: str, requests) -> str | None:
    """Further worlds' begins, run while the judge checks the main world, and calls the
    judge sent before running the reference on their cases: each answer goes
    to the host at once (the judge asks the host for it later). The host's reply is empty
    to go on, anything else once the judge has decided (None: the rest are not needed);
    the reply to the last answer is the next request, as after any answer."""
    requests = requests if isinstance(requests, list) else []
    if not requests:
        return ask(f"{ANSWER_PROMPT}{request_id}\n")
    for index, request in enumerate(requests):
        # Further worlds' begins, and a function check's calls the judge sent before running
        # the reference on the same cases.
        ok = isinstance(request, dict) and (
            (request.get("op") == "begin" and request.get("world") != "main") or request.get("op") == "calls"
        )
        answer = respond(
            lambda r=request, ok=ok: _answer(r) if ok else {"refused": "only further worlds and calls run ahead"}
        )
        prompt = f"{ANSWER_PROMPT}{request_id}/{index}\n{answer}"
        if index == len(requests) - 1:
            return ask(prompt)
        if tell(prompt):
            return None
    return None


def _asker():
    """Send a prompt to the host and wait for its reply, or None outside a kernel that
    allows input. The learner's own ``input()`` and ``getpass`` raise as in a cell that
    allows none (their prompts are not the checker's business)."""
    import getpass

    try:
        from IPython import get_ipython
        from IPython.core.error import StdinNotImplementedError
    except ImportError:
        return None
    shell = get_ipython()
    kernel = getattr(shell, "kernel", None)
    ask = builtins.input  # the kernel's, which sends an input_request to the host
    if kernel is None or not getattr(kernel, "_allow_stdin", False):
        return None

    def refused(*args, **kwargs):
        raise StdinNotImplementedError("raw_input was called, but this frontend does not support input requests.")

    # ipykernel puts back its own after the cell.
    builtins.input = refused
    getpass.getpass = refused
    return ask


def serve(request_id: str, text: str) -> None:
    """Answer one request of the judge (the cell the host sends for it)."""
    _reply(request_id, lambda: _answer(decode(text)))


def decode(text: str):
    return wire.load(text, wire.Decoder(remote=_resolve))


def respond(answer_of) -> str:
    """The encoded answer of ``answer_of()``: data, whatever the learner's code does."""
    from .report import _arm_interrupts

    restore = _arm_interrupts()  # the learner's own KeyboardInterrupt is the learner's error
    try:
        answer = answer_of()
    except Tampered as exc:
        answer = {"tampered": str(exc)}
    except wire.WireError as exc:
        answer = {"refused": str(exc)}
    finally:
        restore()
    return wire.encode(answer, wire.Preparer(_state["handles"], origins=_state.get("origins")))


def reset() -> None:
    """Forget every world (a fresh kernel starts this way; tests reuse one process)."""
    tracer = _state.get("tracer")
    if tracer is not None:
        tracer.uninstall()
    _state.update(worlds={}, handles={}, tracer=None, guard=None, origins=None, sent={}, reads=None, bound={})


def _reply(request_id: str, answer_of) -> None:
    body = respond(answer_of)
    publish = _publisher()
    if publish is not None:
        publish(data={ANSWER_MIME: {"request": request_id, "body": body}}, metadata={})


def _resolve(record):
    """A handle the judge sends back: the learner's own object it stands for."""
    key = record.get("id")
    if key not in _state["handles"]:
        raise wire.WireError("a handle this kernel never gave out")
    return _state["handles"][key]


def _tracer() -> Tracer:
    if _state["tracer"] is None:
        _state["tracer"] = Tracer().install()
    return _state["tracer"]


def _events(segment) -> list:
    tracer = _state["tracer"]
    if tracer is None:
        return []
    events = tracer.traces.pop(("learner", segment), [])
    return [[e.kind, e.name, dict(e.info)] for e in events]


def _answer(request: dict) -> dict:
    answer = _answer_op(request)
    world = request.get("names_after") if isinstance(request, dict) else None
    if isinstance(world, str) and request.get("op") not in _READS_NO_CODE and "tampered" not in answer:
        # The judge reads a world's names again after a request that ran the learner's code:
        # they come with this answer (or "same"), not as a request of their own.
        answer["names_after"] = _names_again(world)
    return answer


_READS_NO_CODE = frozenset({"begin", "names", "pytest"})  # requests names_after is not for


def _answer_op(request: dict) -> dict:
    if isinstance(request, wire.WireError):
        raise request  # a request that did not decode: refused, said as data
    op = request.get("op")
    if op == "begin":
        return _begin(request)
    if op == "names":
        return _names_again(str(request.get("world") or "main"), fresh=request.get("fresh") is True)
    if op == "calls":
        return _calls(request)
    if op == "pytest":
        return _pytest(request)
    target = request.get("target")
    segment = request.get("segment", "run")
    if request.get("seed") is not None:
        seed_all(int(request["seed"]))
    quiet = BoundedOutput(limit=0)  # checks call the learner's code many times: no flood
    with captured(quiet), _tracer().recording("learner", segment):
        try:
            value = _operate(op, target, request)
        except Tampered:
            raise
        except BaseException as exc:  # the learner's exception is data for the judge
            if isinstance(exc, KeyboardInterrupt) and _engine_interrupt():
                raise
            return {"raised": wire.raised(exc), "trace": _events(segment)}
        answer = {"value": value, "trace": _events(segment)}
        if op == "call":
            args = list(request.get("args") or [])
            if request.get("return_args"):
                answer["args"] = args
                after = [wire.version_counter(a) for a in args]
                answer["versions"] = [list(pair) for pair in zip(request.get("versions") or after, after, strict=False)]
            grad = request.get("backward")
            if grad is not None:
                answer.update(_backward(value, grad, args))
    _check_guard("while the checks called it")
    return answer


def _names_again(world: str, fresh: bool = False) -> dict:
    """The names of ``world`` once more (the judge asks after calls that may have changed
    them), or ``same`` when they would cross exactly as the last time they did (at the
    world's begin or since): the judge then keeps what it decoded then (the names of a
    module's data can be large; a forward leaves them). ``fresh``: the judge wrote its own
    copies, so it needs them anyway."""
    body = _prepared(_names(world))
    if not fresh and wire.same_body(_state.setdefault("sent", {}).get(world), body):
        return {"same": True}
    return {"names": _remember_names(world, body)}


def _prepared(value):
    return wire.Preparer(_state["handles"], origins=_state.get("origins"))(value)


def _remember_names(world: str, body) -> wire.Prepared:
    """``body`` to send, and a frozen copy kept to tell whether the next read is the same."""
    _state.setdefault("sent", {})[world] = wire.frozen(body)
    return wire.Prepared(body)


def _calls(request: dict) -> dict:
    """A function check's cases in one request, called in order. Each answer is prepared,
    its tensors' memory copied, as soon as its call returns, so a later call that changes
    memory an earlier one returned does not change what the judge sees of the earlier one;
    all of them cross in the one answer (one load for the judge, not one per case)."""
    target: Any = request.get("target")
    segment = request.get("segment", "run")
    prepared = []
    quiet = BoundedOutput(limit=0)
    with captured(quiet), _tracer().recording("learner", segment):
        for call in list(request.get("calls") or [])[:_MAX_ITEMS]:
            if not isinstance(call, dict):
                raise wire.WireError("a call that is not a request")
            if call.get("seed") is not None:
                seed_all(int(call["seed"]))
            number = call.get("call")
            _tracer().call = number if isinstance(number, int) else None  # the judge numbers the reference's alike
            args = list(call.get("args") or [])
            # Version counters before the call: an input written in place and written back still
            # shows. On meta inputs (the device run's stand-in for a GPU) operations across
            # devices raise, as there.
            before = [wire.version_counter(a) for a in args]
            written: set = set()
            try:
                with (
                    torch_state_guard(),
                    _same_device() if _on_meta(args) else _nothing(),
                    writes.watched(args) as seen,
                ):
                    try:
                        value = target(*args)
                    finally:
                        written.update(seen)
            except Tampered:
                raise
            except BaseException as exc:  # the learner's exception is data for the judge
                if isinstance(exc, KeyboardInterrupt) and _engine_interrupt():
                    raise
                answer: dict = {"raised": wire.raised(exc)}
            else:
                after = [wire.version_counter(a) for a in args]
                answer = {
                    "value": value,
                    "args": args,
                    "versions": [list(v) for v in zip(before, after, strict=True)],
                    "written": sorted(written),  # an argument's memory written by another name (writes.py)
                }
                if call.get("backward") is not None:
                    answer.update(_backward(value, call["backward"], args))
            prepared.append(wire.frozen(_prepared(answer)))
    _check_guard("while the checks called it")
    return {"answers": wire.Prepared(prepared), "trace": _events(segment)}


def _pytest(request: dict) -> dict:
    """An author's test file against the learner's code as a module (pytestrun.py)."""
    from .namespaces import MODULE_KEY
    from .pytestrun import run_file

    ns = _state["worlds"].get(str(request.get("world") or "main")) or {}
    name = str(request.get("module") or "")
    try:
        report = run_file(
            str(request.get("source") or ""),
            ns.get(MODULE_KEY),
            name,
            seed=int(request.get("seed") or 0),
            timeout=float(request.get("timeout") or 10.0),
            filename=str(request.get("filename") or ""),
        )
    except (KeyboardInterrupt, Tampered):
        raise
    except Exception as exc:  # answered as data, so the judge says it in a sentence
        report = {"tests": [], "problem": f"the tests could not run ({type(exc).__name__}: {str(exc)[:300]})"}
    _check_guard("while its tests ran")
    return report


def _engine_interrupt() -> bool:
    from .namespaces import learner_interrupt

    return not learner_interrupt()


def _operate(op, target, request):
    if op == "call":
        args = request.get("args") or []
        # The version counters before the call: an input written in place and written back
        # still shows (the judge compares them with those after, sent with the arguments).
        request["versions"] = [wire.version_counter(a) for a in args]
        # On meta inputs (the device run's stand-in for a GPU) operations across devices raise, as there.
        with torch_state_guard(), _same_device() if _on_meta(args) else _nothing():
            return target(*args, **(request.get("kwargs") or {}))
    if op == "getattr":
        return getattr(target, str(request.get("name")))
    if op == "iter":
        out = []
        for item in target:
            out.append(item)
            if len(out) >= _MAX_ITEMS:
                break
        return out
    if op == "len":
        return len(target)
    if op == "getitem":
        return target[request.get("key")]
    if op == "contains":
        return request.get("key") in target
    if op == "bool":
        return bool(target)
    if op == "repr":
        return repr(target)[:2000]
    raise wire.WireError(f"an unknown request {op!r}")


def _on_meta(args) -> bool:
    return any(isinstance(a, torch.Tensor) and a.is_meta for a in args)


def _same_device():
    from .devicerun import SameDevice

    return SameDevice()


def _backward(out, grad, args) -> dict:
    if not isinstance(out, torch.Tensor) or not out.requires_grad:
        return {"backward": "no-grad"}
    try:
        out.backward(grad.to(out.dtype).to(out.device))
    except Exception as exc:
        return {"backward": "failed", "backward_error": wire.raised(exc)}
    return {"backward": "ok", "grads": [a.grad if isinstance(a, torch.Tensor) else None for a in args]}


def _begin(request: dict) -> dict:
    world = str(request.get("world") or "main")
    device = torch.device(str(request.get("device") or "cpu"))
    seed = int(request.get("seed") or 0)
    ns = new_namespace(device, request.get("module"))
    _state["worlds"][world] = ns
    tracker = None
    if request.get("track_generators"):
        from .devicerun import Generators

        tracker = Generators(_state.get("reads"))  # what the main world read, answered on meta
        _state["origins"] = tracker.of
    # The output a learner sees is the main world's: the device run and further worlds run
    # the same code again, quietly (as their own cells did, whose output nobody showed).
    quiet = captured(BoundedOutput(limit=0)) if world != "main" else _nothing()
    with tracker if tracker is not None else _nothing(), quiet:
        answer = _begin_in(request, world, ns, seed)
    if "names" in answer:  # prepared here, outside the device run's torch function mode
        answer["names"] = _remember_names(world, _prepared(answer["names"]))
    answer["world"] = world  # which run this answers: the judge knows which one it asked for
    return answer


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def _begin_in(request: dict, world: str, ns: dict, seed: int) -> dict:
    main = world == "main"
    # What the main world reads out of tensors, for the device run (reads.py); recorded
    # outside the guard's snapshot, which must not see the recorder's wrappers.
    reads = Reads() if main else None
    if main:
        _state["reads"] = reads
    seed_all(seed)
    with reads.recording() if reads is not None else _nothing():
        setup_error = run_code(request.get("setup") or "", ns, SETUP, "setup")
    if setup_error is not None:
        return {"setup_error": setup_error.as_dict()}
    # What the setup bound to each name a check reads as _setup.NAME, before the code can rebind it.
    _state["bound"][world] = setupnames.kept(ns, request.get("keep_setup"))
    helpers = {k: v for k, v in ns.items() if not k.startswith("__") and (callable(v) or isinstance(v, type))}
    # The guard and the trace watch the main world; another world (the device run, a second
    # seed) only answers with its names.
    tracer = _tracer() if main and request.get("trace", True) else None  # before the guard's snapshot
    guard = _new_guard(request.get("guard", True)) if main else None
    if guard is not None:
        guard.watch_helpers(helpers)
    before = untouched.marks(ns) if main else {}
    bindings = _bindings(ns) if main else {}
    traced = tracer.recording("learner", "run") if tracer is not None else _nothing()
    with traced, reads.recording() if reads is not None else _nothing():
        error = run_code(request.get("code") or "", ns, YOUR_CODE, "code")
    answer = {"error": _error(error), "trace": _events("run")}
    if main:
        answer["untouched"] = untouched.untouched(ns, before)
        answer["kept"] = untouched.kept_values(ns, before)
    replaced = sorted(k for k, v in helpers.items() if k in ns and ns[k] is not v and k.startswith("_"))
    # Which of the setup's helpers the code rebound: the judge knows which of them its checks call.
    answer["rebound"] = sorted(
        k for k, v in helpers.items() if isinstance(v, (types.FunctionType, type)) and k in ns and ns[k] is not v
    )
    # Every name the setup bound that the code bound to another object (or deleted): the
    # judge knows which of them the setup's functions read when the checks call them.
    answer["rebound_names"] = sorted(k for k, was in bindings.items() if not _still_bound(was, ns.get(k, _GONE)))
    if replaced:
        answer["tampered"] = (
            f"Your code replaced the exercise's own helper {replaced[0]}; the checks use the exercise's helpers "
            "as the setup defined them, so this attempt fails. Solve the exercise without redefining them."
        )
    if guard is not None:
        try:
            guard.verify("while it ran")
        except Tampered as exc:
            answer["tampered"] = str(exc)
    names = _names(world)
    if main and "tampered" not in answer:
        # Said in the learner's own words: a tensor whose methods were replaced, a value whose
        # class fakes how it compares (the judge would only see it as not plain data).
        for key, value in names.items():
            if key.startswith("_") or key in helpers:  # the setup's kept bindings too
                continue
            try:
                scan(value, key)
            except Tampered as exc:
                answer["tampered"] = str(exc)
                break
    answer["names"] = names
    return answer


_GONE = object()
_SCALARS = (int, float, complex, str, bytes, bool, type(None))


def _bindings(ns: dict) -> dict:
    """name -> what ``ns`` binds to it now, as ``_still_bound`` reads it: held weakly where
    the object allows it (a strong reference would keep a tensor's graph alive past the
    code's rebinding, which checks of kept graphs count); a number or text strongly (it
    holds nothing); any other object by its id alone."""
    out: dict[str, tuple] = {}
    for key, value in ns.items():
        if key.startswith("__") and key.endswith("__"):
            continue
        if isinstance(value, _SCALARS):
            out[key] = ("object", value)
            continue
        try:
            out[key] = ("weak", weakref.ref(value))
        except TypeError:
            out[key] = ("id", id(value))
    return out


def _still_bound(was: tuple, now) -> bool:
    kind, held = was
    if kind == "object":
        return now is held
    if kind == "weak":
        return held() is not None and held() is now
    return id(now) == held


def _error(error):
    if error is None:
        return None
    out = error.as_dict()
    out["stopped_line"] = error.stopped_line
    out["syntax"] = error.syntax
    return out


def _new_guard(wanted):
    if not wanted:
        return None
    library = LIBRARY
    if library is None:
        library = {name: module for name, module in list(sys.modules.items()) if name.split(".")[0] == __package__}
    _state["guard"] = Snapshot(library)
    return _state["guard"]


def _check_guard(when: str) -> None:
    guard = _state["guard"]
    if guard is not None:
        guard.verify(when)


def _names(world: str) -> dict:
    ns = _state["worlds"].get(world) or {}
    names = {k: v for k, v in ns.items() if k != "__builtins__" and not (k.startswith("__") and k.endswith("__"))}
    # Tensors first: an array over a tensor's memory is then sent over that same storage.
    names = dict(sorted(names.items(), key=lambda kv: not isinstance(kv[1], torch.Tensor)))
    bound = _state["bound"].get(world)
    if bound:  # after the names: an object still bound to its name crosses once, as that name's
        names[setupnames.SETUP_KEY] = dict(bound)
    return names


def builtin_names() -> frozenset:
    return frozenset(dir(builtins))
