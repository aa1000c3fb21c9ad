"""function checks: the learner's function against the reference on generated inputs,
on several devices (``meta`` included), reporting the smallest failing case."""

import inspect
import math
from time import monotonic

import torch

from .. import signatures, wire, writes
from ..compare import (
    DEVICE_HINT,
    Problem,
    crossed,
    grad_problems,
    tensor_problems,
    tolerance,
    value_problems,
    with_strict_types,
)
from ..context import AuthoringError, Context, Outcome, private_names
from ..describe import exception_phrase, join_names, plural, short_repr, type_phrase
from ..explain import evaluate
from ..generate import SpecError, generate_case
from ..guard import scan
from ..namespaces import FALLBACKS, filtered_traceback, own_frames, seed_all, torch_state_guard
from .raises import exception_matches


def available_devices(requested, default: torch.device) -> list:
    """The devices to run on, in order, without duplicates; unavailable ones are skipped."""
    out = []
    for label in requested or ["default", "meta"]:
        if label == "default":
            dev = default
        elif label == "cuda":
            if not torch.cuda.is_available():
                continue
            dev = torch.device("cuda")
        elif label == "mps":
            mps = getattr(torch.backends, "mps", None)
            if not (mps and mps.is_available()):
                continue
            dev = torch.device("mps")
        else:
            dev = torch.device(label)
        try:
            dev = torch.empty(0, device=dev).device  # 'cuda' -> 'cuda:0', so duplicates show
        except Exception:
            continue
        if dev not in out:
            out.append(dev)
    return out


def _parameter_names(*fns) -> list:
    for fn in fns:
        try:
            params = inspect.signature(fn).parameters.values()
        except (TypeError, ValueError):
            continue
        return [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
    return []


def _call(fn, args, written: set | None = None):
    """``fn(*args)`` as (value, None) or (None, exception); with ``written``, the positions
    of the tensor arguments whose memory the call wrote into are added to it (writes.py)."""
    try:
        with torch_state_guard(), writes.watched(args if written is not None else ()) as seen:
            try:
                return fn(*args), None
            finally:
                if written is not None:
                    written.update(seen)
    except Exception as exc:
        return None, exc


def _fresh_args(args) -> list:
    return [a.detach().clone() if isinstance(a, torch.Tensor) else a for a in args]


AGAIN = -1  # the call number of a call made again: its trace is dropped, it is no case of the check


def _random_result(fn, ref_fn, args: list, out, seed: int, tracer=None, segment=None) -> bool:
    """Whether the learner's function, called again on the same inputs with the random
    generators in another state, returns other values, where the reference returns the same
    in both states: its result depends on a random draw (dropout left on, a randn)."""
    if ref_fn is None or not isinstance(out, torch.Tensor) or out.is_meta or out.is_complex():
        return False
    other = seed + 7919
    if hasattr(fn, "call_many"):
        answer = fn.call_many([(_fresh_args(args), None, other, AGAIN)])[0]
        if tracer is not None:
            tracer.forget_call("learner", segment, AGAIN)
        if "raised" in answer:
            return False
        again = answer.get("value")
    else:
        seed_all(other)
        again, exc = _call(fn, _fresh_args(args))
        if exc is not None:
            return False
    if not isinstance(again, torch.Tensor) or again.shape != out.shape or again.is_meta:
        return False
    try:
        if torch.allclose(again.detach().cpu().double(), out.detach().cpu().double(), equal_nan=True):
            return False
        seed_all(seed)
        first, e1 = _call(ref_fn, _fresh_args(args))
        seed_all(other)
        second, e2 = _call(ref_fn, _fresh_args(args))
        return (
            e1 is None
            and e2 is None
            and isinstance(first, torch.Tensor)
            and isinstance(second, torch.Tensor)
            and torch.equal(first, second)
        )
    except (RuntimeError, TypeError):
        return False


def _axes_swapped(ref_fn, args: list, out, seed: int) -> int | None:
    """Where the learner's result ``out`` is the reference's on the one 2-D tensor argument
    transposed, transposed back (statistics per row where per column were meant): the
    argument's index; None otherwise."""
    tensors = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
    if len(tensors) != 1 or not isinstance(out, torch.Tensor) or out.is_meta:
        return None
    k = tensors[0]
    x = args[k]
    if x.dim() != 2 or x.is_meta or out.shape != x.shape:
        return None
    swapped = list(args)
    swapped[k] = x.detach().t().contiguous()
    seed_all(seed)
    theirs, exc = _call(ref_fn, swapped)
    if exc is not None or not isinstance(theirs, torch.Tensor) or theirs.shape != x.shape[::-1]:
        return None
    try:
        mine, back = out.detach().cpu().double(), theirs.detach().t().cpu().double()
        return k if torch.allclose(mine, back, rtol=1e-5, atol=1e-6, equal_nan=True) else None
    except (RuntimeError, TypeError):
        return None


def _one_reading(readings: list):
    """The one reading every failing case whose values could be read allows (two cases at
    least; a case whose rows do not each share one ratio tells nothing); None otherwise."""
    readings = [r for r in readings if r is not None]
    if len(readings) < 2 or any(not r for r in readings):
        return None
    common = frozenset.intersection(*readings)
    return next(iter(common)) if len(common) == 1 else None


def _row_ratios(out, ref_out, rtol: float) -> list | None:
    """Per row (dim 0), the one ratio of the learner's result to the reference's, or None for a
    row where the reference is all zero; None when some row's entries do not share one ratio."""
    if not isinstance(out, torch.Tensor) or not isinstance(ref_out, torch.Tensor) or out.is_meta or ref_out.is_meta:
        return None
    if out.shape != ref_out.shape or out.dim() < 1 or out.numel() == 0 or out.numel() > 100_000:
        return None
    try:
        mine, theirs = (
            out.detach().cpu().double().reshape(out.shape[0], -1),
            ref_out.detach().cpu().double().reshape(out.shape[0], -1),
        )
    except (RuntimeError, TypeError):
        return None
    ratios: list = []
    for a, e in zip(mine, theirs, strict=True):
        keep = e.abs() > 1e-12
        if not bool(keep.any()):
            ratios.append(None)
            continue
        r = a[keep] / e[keep]
        if not bool(torch.isfinite(r).all()) or not torch.allclose(r, r[:1].expand_as(r), rtol=rtol, atol=1e-9):
            return None
        ratios.append(float(r[0]))
    return ratios


def _divisors_swapped(args: list, out, ref_out) -> frozenset | None:
    """The readings of the learner's result as the reference's divided, row by row, by one
    argument's size along a dim where an integer argument's entry was meant (a mean over every
    time step where each row's length was meant), or the reverse: ``{(int arg, tensor arg, dim,
    'size' or 'counts')}`` naming what the learner's code divided by; None where it tells nothing."""
    # a bfloat16 result holds its ratio to a few of its eps, not to float32's
    rtol = (
        max(1e-3, 4 * torch.finfo(out.dtype).eps) if isinstance(out, torch.Tensor) and out.is_floating_point() else 1e-3
    )
    ratios = _row_ratios(out, ref_out, rtol)
    if ratios is None or all(r is None for r in ratios):
        return None
    rows = len(ratios)
    counts = [
        i
        for i, a in enumerate(args)
        if isinstance(a, torch.Tensor)
        and not a.is_meta
        and a.dim() == 1
        and a.shape[0] == rows
        and not a.is_floating_point()
        and a.dtype != torch.bool
    ]
    found = set()
    for c in counts:
        n = args[c].detach().cpu().double().tolist()
        for k, x in enumerate(args):
            if k == c or not isinstance(x, torch.Tensor) or x.dim() < 2 or x.shape[0] != rows:
                continue
            for d in range(1, x.dim()):
                size = x.shape[d]
                if size == 0 or all(v == size for v in n):
                    continue
                # the learner's result over the reference's, per row, if it divided by the size
                # (where each row's count was meant), or by the counts (where the size was)
                for how, wanted in (
                    ("size", [v / size for v in n]),
                    ("counts", [size / v if v else None for v in n]),
                ):
                    if all(
                        r is None or (w is not None and abs(r - w) <= rtol * abs(w))
                        for r, w in zip(ratios, wanted, strict=True)
                    ):
                        found.add((c, k, d, how))
    return frozenset(found)


def _raised(exc) -> str:
    if isinstance(exc, wire.Raised):
        at = f" at line {exc.line} of your code" if exc.line else ""
        return f"it raised {exception_phrase(exc)}{at}"
    mine = own_frames(exc)
    at = f" at line {mine[-1].lineno} of your code" if mine else ""
    return f"it raised {exception_phrase(exc)}{at}"


def _needs_data(exc) -> bool:
    """An error the meta device raises for want of data, not a device bug."""
    from ..devicerun import no_data_error

    ename = exc.ename if isinstance(exc, wire.Raised) else type(exc).__name__
    return no_data_error(ename, str(exc))


def dtype_hint(ref: torch.Tensor, inputs) -> str | None:
    """'the expected dtype is x's ...' when the expected dtype follows an input. It names no cause:
    a tensor made without dtype= and a result cast afterwards look alike from the outside."""
    for label, value in inputs:
        if isinstance(value, torch.Tensor) and value.dtype == ref.dtype:
            return (
                f"the expected dtype is {label}'s: tensors your code creates or casts must follow it "
                f"(dtype={label}.dtype, torch.zeros_like, {label}.new_zeros)"
            )
    return None


_HALF = (torch.float16, torch.bfloat16)


def _size_of(ctx, pattern, inputs) -> str | None:
    return ctx._count_named(pattern.k, inputs, pattern.name) if isinstance(pattern, signatures.Scaled) else None


def _sizes_that_hold(ctx, reported, inputs, others, labels) -> None:
    """A factor read as a count (``2 times ..., consistent with a sum where a mean over 2
    values was meant (2 is the size of x's dimension 0)``) is said only where every other
    failing case's values show the same count of their own inputs: a factor that equals a
    size in one case only is a coincidence there, and the fact (2 times) is all that is said.
    A case on half-precision inputs neither holds nor refutes it: its rounding hides an exact
    factor (0.1668 for 1/6)."""
    for problem in reported:
        data = problem.data or {}
        size = _size_of(ctx, data.get("pattern"), inputs)
        if not size:
            continue
        for other in others:
            if any(isinstance(a, torch.Tensor) and a.dtype in _HALF for a in other[1].args):
                continue
            readings = [(p.data or {}).get("pattern") for p in other[4].get("absorb") or []]
            other_inputs = list(zip(labels, other[1].args, strict=False))
            if not any(_size_of(ctx, r, other_inputs) == size for r in readings):
                data["pattern"] = str(data["pattern"])  # the case's fact, without the count
                break


def output_problems(
    out, ref, name: str, compare, tol, meta: bool, hint: str, *, broadcast: bool = False, inputs=()
) -> list:
    if isinstance(ref, torch.Tensor):
        if not isinstance(out, torch.Tensor):
            return [Problem("type", f"{name} is {type_phrase(out)}, expected a tensor", "a tensor", short_repr(out))]
        props = [p for p in compare if p != "grad"]
        if meta:
            props = [p for p in props if p in ("shape", "dtype", "device")]
        return tensor_problems(
            out,
            ref,
            name,
            props,
            tol,
            hint,
            broadcast=broadcast,
            dtype_hint=dtype_hint(ref, inputs),
            sources=[(label, arg) for label, arg in inputs if isinstance(arg, torch.Tensor)],
        )
    if isinstance(ref, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in ref):
        if not isinstance(out, (list, tuple)):
            return [
                Problem(
                    "type",
                    f"{name} is {type_phrase(out)}, expected {type_phrase(ref)} of {len(ref)}",
                    short_repr(ref),
                    short_repr(out),
                )
            ]
        if len(out) != len(ref):
            return [
                Problem(
                    "length",
                    f"{name} has {plural(len(out), 'item')}, expected {len(ref)}",
                    str(len(ref)),
                    str(len(out)),
                )
            ]
        order = None if meta else crossed(out, ref, name)
        if order is not None:
            return [order]
        found = []
        for i, (o, r) in enumerate(zip(out, ref, strict=False)):
            found.extend(
                output_problems(o, r, f"{name}[{i}]", compare, tol, meta, hint, broadcast=broadcast, inputs=inputs)
            )
        return found
    return value_problems(out, ref, name, tol)


def _snapshot(args) -> list:
    """Each tensor argument's value and version counter before a call (None for others)."""
    return [(a.detach().clone(), wire.version_counter(a)) if isinstance(a, torch.Tensor) else None for a in args]


def _same_tensor(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_meta or b.is_meta:
        return True  # no values to compare; the version counter still tells
    a, b = a.detach().cpu(), b.detach().cpu()
    if a.dtype.is_floating_point or a.dtype.is_complex:
        return bool(torch.equal(torch.nan_to_num(a), torch.nan_to_num(b)) and torch.equal(a.isnan(), b.isnan()))
    return bool(torch.equal(a, b))


def changed_inputs(before: list, after: list, versions: list | None = None, written=()) -> dict:
    """Argument index -> how the call changed that tensor argument: 'values' (they differ
    now), 'version' (written in place, even if written back) or 'memory' (written by another
    name for its memory, such as .data, which moves no counter of its own, and written back). ``versions`` are the learner kernel's (before, after) counters; without
    them the tensors' own count. ``written``: the positions writes.py saw written."""
    written_into = {j for j in written if type(j) is int} if isinstance(written, (list, tuple, set)) else set()
    out = {}
    for j, snap in enumerate(before):
        if snap is None or j >= len(after) or not isinstance(after[j], torch.Tensor):
            continue
        value, version = snap
        now = after[j]
        pair = versions[j] if versions and j < len(versions) and versions[j] else None
        if pair is not None and pair[0] is not None and pair[1] is not None:
            written = int(pair[1]) != int(pair[0])
        elif version is None:
            written = False  # an inference tensor keeps no version counter: its values still tell
        else:
            written = wire.version_of(now) != version
        if not _same_tensor(value, now):
            out[j] = "values"
        elif written:
            out[j] = "version"
        elif j in written_into:
            out[j] = "memory"
    return out


def _input_problems(name: str, changed: dict, labels: list, mutates: list) -> list:
    """A function must leave the tensors it is given alone, unless the exercise says
    which it changes (``mutates``: those are compared as outputs instead)."""
    found = []
    for j, how in sorted(changed.items()):
        label = labels[j]
        if label in mutates:
            continue
        fix = f"work on a copy ({label}.clone()) or with out-of-place operations ({label} - m, not {label} -= m)"
        if how == "values":
            sentence = (
                f"{name} changed its argument {label} in place: the caller's tensor no longer holds its values; {fix}"
            )
        elif how == "memory":
            sentence = (
                f"{name} wrote into its argument {label}'s memory by another name (such as {label}.data or "
                f"{label}.numpy()), then gave the values back: while the call ran, the caller's tensor held other "
                f"values; {fix}"
            )
        else:
            sentence = (
                f"{name} wrote into its argument {label} in place (its version counter moved), "
                f"even though the values came back the same; {fix}"
            )
        found.append(Problem("input", sentence, "unchanged", "changed"))
    return found


def _mutated_problems(case_args, ref_args, labels: list, mutates: list, tol, meta: bool) -> list:
    """The arguments the function is meant to change, compared with the reference's after its call."""
    found = []
    for j, label in enumerate(labels):
        if label not in mutates or j >= len(case_args):
            continue
        a, e = case_args[j], ref_args[j]
        if isinstance(a, torch.Tensor) and isinstance(e, torch.Tensor):
            props = ["shape", "dtype", "device"] if meta else ["shape", "dtype", "device", "values"]
            found.extend(tensor_problems(a, e, f"{label} after the call", props, tol))
    return found


def _grad_output(ref_out, seed):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(
        tuple(ref_out.shape), generator=gen, dtype=torch.complex64 if ref_out.is_complex() else torch.float64
    )


def _wants_backward(ref_out) -> bool:
    return isinstance(ref_out, torch.Tensor) and ref_out.requires_grad


def _backward_problems(out, ref_out, case, ref_case, names, tol, seed, remote=None) -> list:
    """With 'grad' compared: backpropagate the same random gradient, compare input grads.

    ``remote`` is the answer of a call made in the learner's kernel, which backpropagated
    there already and sent the inputs' gradients back."""
    if not _wants_backward(ref_out):
        return []
    if not (isinstance(out, torch.Tensor) and wire.requires_grad(out)):
        return [
            Problem(
                "grad",
                "result does not require grad: it lost its autograd history "
                "(.detach(), .item(), .numpy() or torch.no_grad() break the graph)",
                "requires_grad=True",
                "requires_grad=False",
            )
        ]
    g = _grad_output(ref_out, seed)
    ref_out.backward(g.to(ref_out.dtype).to(ref_out.device))
    if tuple(out.shape) != tuple(ref_out.shape):
        return []
    if remote is None:
        try:
            out.backward(g.to(out.dtype).to(out.device))
        except Exception as exc:
            return [Problem("grad", f"backward() through the result failed: {exception_phrase(exc)}")]
    elif remote.get("backward") == "failed":
        error = remote.get("backward_error")
        return [Problem("grad", f"backward() through the result failed: {exception_phrase(error)}")]
    else:
        for a, grad in zip(case.args, remote.get("grads") or [], strict=False):
            if isinstance(a, torch.Tensor) and a.is_leaf and a.requires_grad and isinstance(grad, torch.Tensor):
                a.grad = grad
    found = []
    for j, (a, e) in enumerate(zip(case.args, ref_case.args, strict=False)):
        if isinstance(a, torch.Tensor) and isinstance(e, torch.Tensor) and e.requires_grad:
            label = names[j] if j < len(names) else f"argument {j + 1}"
            found.extend(grad_problems(a, e, label, tol))
    return found


CALLS_PER_REQUEST = 1000  # a function check's cases cross to the learner's kernel in requests of at most this many
FIRST_BATCH = 50  # cases of the first batch per device (the default 25 go in one request); later ones double


def _labels(check: dict, ref_fn, fn) -> list:
    """Each argument's name: the pack's ``name``, else the reference's parameter, else the learner's."""
    names = (_parameter_names(ref_fn) if ref_fn is not None else []) or (
        fn.parameter_names() if hasattr(fn, "parameter_names") else _parameter_names(fn)
    )
    return [
        spec.get("name") or (names[i] if i < len(names) else f"argument {i + 1}")
        for i, spec in enumerate(check["args"])
    ]


def _property_problems(prop: str, out, args, labels: list, meta: bool, helpers: dict) -> list:
    """The check's ``property`` on one call: [] when it holds, else one Problem saying why not.
    ``helpers`` are the reference namespace's names (setup's helpers), which it may call."""
    scope = {**helpers, **FALLBACKS, "math": math, **dict(zip(labels, args, strict=False)), "result": out}
    private = bool(private_names(prop))
    shown = "the check's property" if private else prop
    try:
        value, sides = evaluate(prop, scope, hidden=lambda src: bool(private_names(src)))
        holds = bool(value)
    except Exception as exc:
        if meta:
            return []  # no data on meta (values, or tensors made on another device): the real devices decide
        return [Problem("property", f"{shown} could not be evaluated: {exception_phrase(exc)}", "true", "an error")]
    if holds:
        return []
    return [Problem("property", f"{shown} failed" + (f": {sides}" if sides else ""), "true", "false")]


INPUT_SHOWN = 12  # a failing case's tensor inputs of at most this many elements are shown by value


def _inputs_shown(labels: list, before: list) -> str:
    """'; where x is tensor([[...]])' for the failing case's small tensor inputs, as they were
    before the call: the learner can run the same call (the case says shapes and numbers)."""
    parts = []
    for label, snap in zip(labels, before, strict=False):
        if snap is not None and not snap[0].is_meta and snap[0].numel() <= INPUT_SHOWN:
            parts.append(f"{label} is {short_repr(snap[0], 100)}")
    return f"; where {', '.join(parts)}" if parts else ""


def _shown_name(name: str, ctx: Context) -> str:
    """How feedback names the checked function: its label, else its name, never a setup
    helper's ``_`` name (the helper runs the learner's code: that is what is checked)."""
    return ctx.label or ("your code" if name.startswith("_") else name)


def check_function(check: dict, ctx: Context) -> Outcome:
    name = check["name"]
    prop = check.get("property")
    oracle = check.get("reference") or (None if prop else name)
    if oracle is not None and oracle not in ctx.ref:
        where = "the setup" if check.get("reference") else "the reference solution"
        raise AuthoringError(f"{where} does not define {oracle}")
    ref_fn = ctx.ref[oracle] if oracle is not None else None
    shown = _shown_name(name, ctx)
    if name not in ctx.learner:
        return Outcome(False, ctx.undefined(name), "a function", None)
    fn = ctx.learner[name]
    if not callable(fn):
        return Outcome(False, f"{shown} is {type_phrase(fn)}, expected a function", "a function", short_repr(fn))

    labels = _labels(check, ref_fn, fn)
    helpers = {k: v for k, v in ctx.ref.items() if not k.startswith("__")}
    tensor_args = [labels[i] for i, spec in enumerate(check["args"]) if spec.get("type") == "tensor"]
    hint = (
        (
            f"the expected device is {tensor_args[0]}'s: tensors your code creates or moves must follow it "
            f"(device={tensor_args[0]}.device, torch.zeros_like, {tensor_args[0]}.new_zeros)"
        )
        if tensor_args
        else DEVICE_HINT
    )
    compare = check.get("compare") or ["shape", "dtype", "device", "values"]
    tol = tolerance(check.get("rtol"), check.get("atol"))
    seed = int(check.get("seed") or 0) + ctx.input_shift
    cases = int(check.get("cases") or 25)
    budget = float(check.get("time_budget") or 5.0)
    devices = available_devices(check.get("devices"), ctx.device)
    if not tensor_args:
        devices = devices[:1]  # the same inputs on every device: one run says it all
    mutates = list(check.get("mutates") or [])
    unknown = [label for label in mutates if label not in labels]
    if unknown:
        raise AuthoringError(f"mutates names {join_names(unknown)}, which {shown} has no argument called")

    failures: list = []
    counts = {"ran": 0, "skipped": 0}
    strict = bool(check.get("strict_types"))
    distinct = bool(check.get("distinct_dims"))

    def generate(dev, i: int) -> tuple:
        """Case ``i`` on ``dev``, twice: the reference's copy and the learner's."""
        try:
            ref_case = generate_case(check["args"], check.get("dims") or {}, seed, i, dev, labels, distinct)
            case = generate_case(check["args"], check.get("dims") or {}, seed, i, dev, labels, distinct)
        except SpecError as spec_error:
            raise AuthoringError(f"the inputs of this check cannot be generated: {spec_error}") from None
        return ref_case, case

    def plan(order: int, dev, i: int, generated: tuple | None = None):
        """Case ``i`` on ``dev``, the reference called on its own copy (None: skipped)."""
        meta = dev.type == "meta"
        ref_case, case = generated or generate(dev, i)
        ref_out, ref_exc = None, None
        if ref_fn is not None:
            seed_all(seed + i)  # functions that draw random numbers draw the same ones
            ref_before = _snapshot(ref_case.args)
            with ctx.side("ref", order * cases + i):
                ref_out, ref_exc = _call(ref_fn, ref_case.args)
            ref_changed = [labels[j] for j in changed_inputs(ref_before, ref_case.args) if labels[j] not in mutates]
            if ref_exc is None and ref_changed:
                raise AuthoringError(
                    f"the reference {oracle} changes its argument {join_names(ref_changed)} in place: "
                    "declare it under mutates, or make the reference leave its inputs alone"
                )
            if ref_exc is not None and meta:
                counts["skipped"] += 1  # the reference itself needs real data here: nothing to compare
                return None
            broken = _property_problems(prop, ref_out, ref_case.args, labels, meta, helpers) if prop else []
            if ref_exc is None and broken:
                raise AuthoringError(
                    f"the reference {oracle} does not satisfy the property for {ref_case.describe()}: "
                    f"{broken[0].sentence}"
                )
        return (order, dev, meta, i, ref_case, case, ref_out, ref_exc)

    def judge_case(entry, remote) -> None:
        """The learner's call of one planned case (``remote``: its answer from the learner's kernel)."""
        order, dev, meta, i, ref_case, case, ref_out, ref_exc = entry
        before = _snapshot(case.args)  # the judge's copy: only the learner's kernel's was called
        if remote is not None:
            out, exc = remote.get("value"), remote.get("raised")
            after = list(remote.get("args") or [])
            changed = changed_inputs(before, after, remote.get("versions"), remote.get("written") or ())
        else:
            seed_all(seed + i)
            written: set = set()
            with ctx.side("learner", order * cases + i):
                out, exc = _call(fn, case.args, written)
            after = list(case.args)
            changed = changed_inputs(before, after, written=written)
        if (exc is not None or ref_exc is not None) and ctx.tracer is not None:
            # A call that raised stopped part-way: its protocol calls say nothing about the bug.
            for side in ("learner", "ref"):
                ctx.tracer.forget_call(side, ctx.segment, order * cases + i)
        if meta and exc is not None and _needs_data(exc):
            # Right on every real device, unable to run where there is no data (a loop over
            # .item() values): meta tells nothing here, as when the reference needs data.
            counts["skipped"] += 1
            return
        scan(out, "result")
        counts["ran"] += 1
        details: dict = {}
        problems: list = []
        if ref_exc is not None:
            if exc is not None and exception_matches(exc, type(ref_exc).__name__):
                return
            sentences = (
                [f"{_raised(exc)}, expected {type(ref_exc).__name__}"]
                if exc is not None
                else [f"it returned {short_repr(out, 80)}, expected it to raise {exception_phrase(ref_exc)}"]
            )
        elif exc is not None:
            sentences = [_raised(exc)]
            details["raised"] = exc
            details["traceback"] = exc.traceback if isinstance(exc, wire.Raised) else filtered_traceback(exc)
        else:
            if ref_fn is not None:
                inputs = list(zip(labels, ref_case.args, strict=False))
                problems = output_problems(
                    out,
                    ref_out,
                    "result",
                    compare,
                    tol,
                    meta,
                    hint,
                    broadcast=bool(check.get("broadcast")),
                    inputs=inputs,
                )
                if strict:
                    problems = with_strict_types(problems, out, ref_out, "result")
                if not problems and "grad" in compare and not meta:
                    try:
                        problems = _backward_problems(out, ref_out, case, ref_case, labels, tol, seed + i, remote)
                    except Exception as err:
                        problems = [Problem("grad", f"backward() failed: {exception_phrase(err)}")]
                problems = _mutated_problems(after, ref_case.args, labels, mutates, tol, meta) + problems
            if prop:
                problems = problems + _property_problems(prop, out, after, labels, meta, helpers)
            problems = _input_problems(shown, changed, labels, mutates) + problems
            if problems and ref_fn is not None and not meta and not changed:
                details["axes_swapped"] = _axes_swapped(ref_fn, list(ref_case.args), out, seed + i)
                details["divisors"] = _divisors_swapped(list(ref_case.args), out, ref_out)
                # the learner's answer and its inputs as they came, to call it again if it is the one reported
                given = [b[0] if b is not None else a for a, b in zip(case.args, before, strict=True)]
                details["_out"] = (out, given, seed + i)
            sentences = [p.sentence for p in problems]
            if problems:
                details["absorb"] = problems
                details["problems"] = [
                    {"property": p.prop, "expected": p.expected, "actual": p.actual} for p in problems
                ]
        if sentences:
            pair = (problems[0].expected, problems[0].actual) if details.get("problems") else (None, None)
            where = _inputs_shown(labels, before)
            failures.append(((case.size, case.ndim, order, i), case, dev, sentences, details, pair, where))

    # Cases go in batches: the reference on a batch, then the learner's function on it in one
    # request when it lives in the learner's kernel (not one round trip a case). The time
    # budget, each device's share of it, ends them: the first two cases always run, and a
    # slow learner's function can cut its cases short only after the first batch.
    cut = False
    remote_fn = hasattr(fn, "call_many")

    def sent_first(dev) -> bool:
        # The learner's calls need the reference's output only to backpropagate through it:
        # without that, they are sent first and the reference runs while the learner's kernel calls.
        return remote_fn and hasattr(fn, "post_many") and not ("grad" in compare and dev.type != "meta")

    def post(batches: list) -> tuple:
        """One request for the calls of ``batches`` ([(order, numbers, generated)])."""
        return fn.post_many(
            [
                (c.args, None, seed + k, order * cases + k)
                for order, numbers, generated in batches
                for k, (_, c) in zip(numbers, generated, strict=True)
            ]
        )

    def judge_batches(batches: list, posted: tuple) -> None:
        """The reference on each batch's cases while the learner's kernel calls, then each case judged."""
        planned = [
            plan(order, devices[order], k, pair)
            for order, numbers, generated in batches
            for k, pair in zip(numbers, generated, strict=True)
        ]
        numbered = [(order, k) for order, numbers, _ in batches for k in numbers]
        for (order, k), entry, answer in zip(numbered, planned, fn.answers_of(posted), strict=True):
            if entry is not None:
                judge_case(entry, answer)
            elif ctx.tracer is not None:  # skipped: neither call says anything
                for side in ("learner", "ref"):
                    ctx.tracer.forget_call(side, ctx.segment, order * cases + k)

    # When every device's cases fit in one batch (so the time budget cuts none), the
    # devices' batches go in one request, before any reference call: the learner's kernel
    # calls them all while the judge runs the reference on each.
    together = cases <= FIRST_BATCH and all(sent_first(dev) for dev in devices)
    if together:
        batches = [(order, range(cases), [generate(dev, k) for k in range(cases)]) for order, dev in enumerate(devices)]
        judge_batches(batches, post(batches))
    for order, dev in enumerate(devices if not together else ()):
        until = monotonic() + budget / len(devices)
        i, size = 0, FIRST_BATCH
        early = sent_first(dev)
        while i < cases:
            if early:
                first = i
                cases_here: list = []
                while i < cases and len(cases_here) < size and not (i >= 2 and monotonic() > until):
                    cases_here.append(generate(dev, i))
                    i += 1
                if cases_here:
                    batch_here = [(order, range(first, i), cases_here)]
                    judge_batches(batch_here, post(batch_here))
                if i < cases and monotonic() > until:
                    cut = True
                    break
                size = min(size * 2, CALLS_PER_REQUEST)
                continue
            batch: list = []
            while i < cases and len(batch) < size and not (i >= 2 and monotonic() > until):
                entry = plan(order, dev, i)
                i += 1
                if entry is not None:
                    batch.append(entry)
            answers: list = [None] * len(batch)
            if remote_fn and batch:
                calls = []
                for _, _, meta, k, _, case, ref_out, ref_exc in batch:
                    want = "grad" in compare and not meta and ref_exc is None and _wants_backward(ref_out)
                    calls.append(
                        (case.args, _grad_output(ref_out, seed + k) if want else None, seed + k, order * cases + k)
                    )
                answers = fn.call_many(calls)
            for entry, answer in zip(batch, answers, strict=True):
                judge_case(entry, answer)
            if i < cases and monotonic() > until:
                cut = True
                break
            size = min(size * 2, CALLS_PER_REQUEST)
    ran, skipped = counts["ran"], counts["skipped"]

    device_names = [str(d) for d in devices]
    if failures:
        failures.sort(key=lambda f: f[0])
        _, case, dev, sentences, details, (expected, actual), where = failures[0]
        inputs = list(zip(labels, case.args, strict=False))
        reported = details.pop("absorb", [])
        _sizes_that_hold(ctx, reported, inputs, failures[1:], labels)
        bare = ctx.absorb(reported, inputs)  # signatures of the case reported, not of others
        if bare or not any((p.data or {}).get("pattern") for p in reported):
            # Too few values in the case reported to read (a 1 x 2 result), or a factor with no
            # cause there (1/2 on n = 1): the largest failing case may show how the values
            # differ, said with its own inputs.
            larger = max(failures[1:], key=lambda f: f[0][:2], default=None)
            if larger is not None and larger[4].get("absorb"):
                ctx.absorb_reading_of(
                    larger[4]["absorb"],
                    f"{larger[1].describe()} on {larger[2]}",
                    list(zip(labels, larger[1].args, strict=False)),
                    instead=bare,
                )
        if details.get("raised") is not None:
            ctx.note_error_cause(details.pop("raised"), "your function")
        # Over the cases that could be read (real data, a value compared): each of them, and more than one.
        readable = [f[4]["axes_swapped"] for f in failures if "axes_swapped" in f[4]]
        swapped = set(readable)
        if len(readable) >= 2 and len(swapped) == 1 and None not in swapped:
            # Every failing case: one reading, established on each of them, not a coincidence of one.
            arg = labels[swapped.pop()] if labels else "its argument"
            ctx.note(
                f"in each of the {len(readable)} failing cases whose values were compared, {shown} returns the "
                f"reference's result for {arg} transposed, transposed back: consistent with working along dim 1 of {arg} where dim 0 was meant (a mean, std, sum or "
                "softmax over the other dim)",
                "cause:reduction-dim",
            )
        divisor = _one_reading([f[4].get("divisors") for f in failures if "divisors" in f[4]])
        if divisor is not None:
            c, k, d, how = divisor
            counted = labels[c] if labels else f"argument {c}"
            sized = labels[k] if labels else f"argument {k}"
            along = f"{sized}.shape[{d}]"
            ratio, used, meant = (
                (f"{counted} / {along}", f"{sized}'s size along dim {d}, the same for every row", f"{counted}")
                if how == "size"
                else (f"{along} / {counted}", f"{counted}, each row's own count", f"{along}")
            )
            n = sum(1 for f in failures if f[4].get("divisors"))
            ctx.note(
                f"in each of the {n} failing cases whose values were compared, {shown} returns the reference's "
                f"result times {ratio}, row by row: consistent with dividing by {used}, where {meant} was meant",
                "cause:divisor",
            )
        answered = failures[0][4].get("_out")
        if answered is not None and _random_result(
            fn, ref_fn, answered[1], answered[0], answered[2], ctx.tracer, ctx.segment
        ):
            ctx.note(
                f"{shown}, called again on the inputs of the case below with the random generators in another "
                "state, returns other values, where the reference returns the same: its result depends on more "
                "than its inputs, a random draw (dropout in training mode, a randn or rand) or state kept from "
                "one call to the next",
                "cause:random-result",
            )
        for f in failures:
            f[4].pop("axes_swapped", None)
            f[4].pop("divisors", None)
            f[4].pop("_out", None)
        message = f"{shown} fails for {case.describe()} on {dev}: {'; '.join(sentences[:3])}{where}"
        if len(failures) > 1:
            message += f" ({len(failures)} of {plural(ran, 'case')} fail)"
        return Outcome(
            False,
            message,
            expected,
            actual,
            {
                **details,
                "case": case.describe(),
                "device": str(dev),
                "failed": len(failures),
                "ran": ran,
                "skipped": skipped,
                "devices": device_names,
            },
        )
    against = "matches the reference" if ref_fn is not None else "satisfies the property"
    message = f"✓ {shown} {against} on {plural(ran, 'generated case')} ({join_names(device_names)})"
    if skipped:
        message += f"; {skipped} skipped on meta, where they need real values"
    return Outcome(
        True, message, details={"ran": ran, "skipped": skipped, "devices": device_names, "time_budget_reached": cut}
    )
