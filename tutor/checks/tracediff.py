"""The first meaningful difference between the learner's protocol trace and the reference's,
stated in words (see trace.py for what is recorded).

Rules run in order of how much a difference explains: the optimizer protocol (zero_grad,
backward, step), train/eval modes, grad modes, save/load, device moves, seeds and random
draws, DataLoader options. Each rule returns a sentence or None; the first sentence wins
per segment (the code's run, or one check's calls into the learner's functions).
"""

import ast
import re

from .describe import plural

# Topics let the runner drop a built-in signature that says the same thing less precisely.
TOPIC_ZERO_GRAD = "zero_grad"
AUTOGRAD_GRAD = "torch.autograd.grad"  # how trace.py names a call of it among the backward() calls
TOPIC_GRAD_MODE = "grad_mode"  # no_grad / inference_mode used on one side only


def _kinds(events, *kinds) -> list:
    return [e for e in events if e.kind in kinds]


def _first_name(events, kind: str, fallback: str | None) -> str | None:
    for e in events:
        if e.kind == kind and e.name:
            return e.name
    return fallback


def _scoped_calls(tree: ast.AST, scope: str = "<module>"):
    """(call, the name of the function whose body holds it, "<module>" for top-level code)."""
    for child in ast.iter_child_nodes(tree):
        inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else scope
        if isinstance(child, ast.Call):
            yield child, scope
        yield from _scoped_calls(child, inner)


def _calls_in(code: str, *names: str, on: str | None = None, within: set | None = None) -> bool:
    """Whether the learner's source calls any of ``names`` (as ``f(...)`` or ``x.f(...)``);
    with ``on``, only ``on.f(...)`` or ``x.f(on)`` (scaler.step(opt)) count; with ``within``,
    only calls in the bodies of those functions ("<module>": top-level code)."""
    try:
        tree = ast.parse(code or "")
    except SyntaxError:
        return False
    for n, scope in _scoped_calls(tree):
        if within is not None and scope not in within:
            continue
        f = n.func
        if isinstance(f, ast.Attribute) and f.attr in names:
            if on is None or ast.unparse(f.value) == on or any(ast.unparse(a) == on for a in n.args):
                return True
        elif isinstance(f, ast.Name) and f.id in names and on is None:
            return True
    return False


_UPDATES = {"sub_", "add_", "copy_", "mul_", "addcmul_", "addcdiv_", "lerp_"}


def _grads_by_hand(code: str) -> bool:
    """Whether the learner's source takes gradients from ``torch.autograd.grad`` (or
    torch.func's ``grad``), which returns them and leaves every ``.grad`` as it was, to
    update the weights with them itself: then a missing step() does not establish that "the
    weights never change", nor a missing backward() that "no gradients are computed"."""
    try:
        tree = ast.parse(code or "")
    except SyntaxError:
        return False
    imported = {
        alias.asname or alias.name
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and n.module in ("torch.autograd", "torch.func", "functorch")
        for alias in n.names
        if alias.name in ("grad", "grad_and_value", "vjp")
    }
    for n in ast.walk(tree):
        if not isinstance(n, ast.Call):
            continue
        f = n.func
        if isinstance(f, ast.Attribute) and f.attr in ("grad", "grad_and_value", "vjp"):
            owner = ast.unparse(f.value)
            if owner.endswith(("autograd", "func", "functorch")):
                return True
        elif isinstance(f, ast.Name) and f.id in imported:
            return True
    return False


def _updates_by_hand(code: str) -> bool:
    """Whether the learner's source writes a tensor in place from a gradient, as a hand-written
    update does (``p -= lr * p.grad``, ``p.data.sub_(lr * p.grad)``): then "the weights never
    change" is not established by a missing step()."""
    try:
        tree = ast.parse(code or "")
    except SyntaxError:
        return False

    def reads_grad(node) -> bool:
        return any(isinstance(n, ast.Attribute) and n.attr == "grad" for n in ast.walk(node))

    for n in ast.walk(tree):
        in_place = isinstance(n, ast.AugAssign) or (
            isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _UPDATES
        )
        if in_place and reads_grad(n):
            return True
    return False


def _times(n: int) -> str:
    return "once" if n == 1 else "twice" if n == 2 else f"{n} times"


# ---------------------------------------------------------------- optimizer protocol


def _protocol(events) -> str:
    """'ZBS' letters: zero_grad, backward, step (the order that matters)."""
    letters = {"zero_grad": "Z", "backward": "B", "step": "S", "clip": "C"}
    return "".join(letters[e.kind] for e in events if e.kind in letters)


def _step_without_backward(seq: str) -> bool:
    """A step with no backward since the last step (or the start)."""
    fresh = False
    for c in seq:
        if c == "B":
            fresh = True
        elif c == "S":
            if not fresh:
                return True
            fresh = False
    return False


def _added_up(events) -> bool:
    """Whether the learner's backward() calls added onto gradients already there, as far as the
    trace established: one it looked at did; or it looked at none, and there was more than
    one. One backward() onto fresh gradients adds up nothing, clears or not."""
    looked = [e.info.get("stale") for e in events if e.kind == "backward"]
    if any(stale is True for stale in looked):
        return True
    return len(looked) > 1 and all(stale is None for stale in looked)


def _first_step_first(seq: str) -> bool:
    """Whether the first step with no backward since the last step comes before any backward
    at all (step-then-backward), rather than after a backward an earlier step used (two steps)."""
    fresh = False
    for i, c in enumerate(seq):
        if c == "B":
            fresh = True
        elif c == "S":
            if not fresh:
                return "B" not in seq[:i]
            fresh = False
    return False


def _zero_between(seq: str) -> bool:
    """zero_grad after a backward and before the step that should use it."""
    pending = False
    for c in seq:
        if c == "B":
            pending = True
        elif c == "Z" and pending:
            return True
        elif c == "S":
            pending = False
    return False


def _clip_order(ls: str, rs: str) -> str | None:
    """Clipping belongs between backward() and step(): after the step it changes nothing used."""

    def clips_after_step(seq):
        return any(
            seq[i] == "C" and "S" in seq[:i] and "B" not in seq[seq.rindex("S", 0, i) : i]
            for i in range(len(seq))
            if "S" in seq[:i]
        )

    def clips_before_a_backward(seq):
        # a clip between two backward() calls with no step() among them: the later gradient
        # adds onto clipped ones (a clip inside a loop of micro-batches)
        return any(re.search(r"B[^S]*C[^S]*B", segment) for segment in seq.split("S"))

    if "C" in rs and "C" not in ls:
        return (
            "the reference clips the gradients (clip_grad_norm_) between backward() and step(); your code never "
            "clips them"
        )
    if clips_before_a_backward(ls) and not clips_before_a_backward(rs):
        if all(re.search(r"C[^BC]*$", segment) for segment in ls.split("S") if "B" in segment):
            # It clips after the last backward() too: that norm is of the whole sum, but the sum
            # holds gradients clipped before.
            return (
                "your code clips the gradients (clip_grad_norm_) before its last backward() ahead of a step() as "
                "well as after it: that backward() adds its gradients onto ones already clipped, so the sum that "
                "the last clip measures and step() applies is not the sum of the gradients; the reference clips "
                "only after the last backward() before step()"
            )
        return (
            "your code clips the gradients (clip_grad_norm_) before its last backward() ahead of a step(): that "
            "backward() adds unclipped gradients onto the clipped ones, and the norm it returns is of a partial "
            "sum; the reference clips only after the last backward() before step()"
        )
    if clips_after_step(ls) and not clips_after_step(rs):
        return (
            "your code clips the gradients after step(): the update already used the unclipped gradients; "
            "call clip_grad_norm_ after backward() and before step()"
        )
    return None


def _optimizer(learner, ref, code=""):
    ls, rs = _protocol(learner), _protocol(ref)
    if ls == rs:
        return None
    clip = _clip_order(ls, rs)
    if clip:
        return clip
    ls, rs = ls.replace("C", ""), rs.replace("C", "")
    opt = _first_name(ref, "step", None) or _first_name(ref, "zero_grad", "opt")
    lopt = _first_name(learner, "step", None) or _first_name(learner, "zero_grad", opt)
    rb, lb = rs.count("B"), ls.count("B")
    rz, lz = rs.count("Z"), ls.count("Z")
    rstep, lstep = rs.count("S"), ls.count("S")
    # Named as the learner's code names it, else as the reference does (never a made-up name).
    loss = _first_name(learner, "backward", None) or _first_name(ref, "backward", "loss")
    if rstep and not lstep:
        # Only where this run went: a step() in another function (one the checks never
        # called) is not one the run skipped.
        ran_in = {e.info.get("in", "<module>") for e in learner}
        if _calls_in(code, "step", on=lopt, within=ran_in):
            # the call is there: what kept the run from it is the cause, not a missing call
            return (
                f"your code contains {lopt}.step(), but its run never reached it, where the reference's steps "
                f"{_times(rstep)}: a condition or an early return before it skipped every update"
            )
        if not lb:
            if _grads_by_hand(code):
                return None  # its torch.autograd.grad (traced as a backward) never ran: no cause is established
            return (
                f"the reference calls {loss}.backward() and {opt}.step() {_times(rstep)}; your code calls neither, "
                f"so no gradient is computed and the weights never change"
            )
        if _updates_by_hand(code) or _grads_by_hand(code):
            return None  # an update written by hand: what it does wrong is in the values, not here
        # Not "after each backward()" where the reference skips some (a GradScaler after an overflow)
        each = (
            f"after each backward() ({_times(rstep)})"
            if rstep == rb
            else f"{_times(rstep)} for its {plural(rb, 'backward() call')}"
        )
        return (
            f"the reference calls {opt}.step() {each}; your code never calls it, "
            f"so the gradients are computed but the weights never change"
        )
    if rb and not lb:
        # step() is mentioned only where there is an optimizer to step.
        after = " (and step() has nothing to apply)" if rstep or lstep else ""
        if _grads_by_hand(code):
            return None  # its torch.autograd.grad (traced as a backward) never ran: no cause is established
        return f"the reference calls {loss}.backward() {_times(rb)}; your code never calls it, so no gradients are computed{after}"
    if lstep and _step_without_backward(ls) and not _step_without_backward(rs) and _first_step_first(ls):
        return (
            f"your code calls {lopt}.step() before {loss}.backward(): step() applies whatever .grad holds at that "
            f"moment (nothing on the first call, the previous batch's gradient after), not this batch's; call "
            f"backward() first, then step()"
        )
    if lstep and _step_without_backward(ls) and not _step_without_backward(rs):
        return (
            f"your code calls {lopt}.step() {_times(lstep)} for {plural(lb, 'backward() call')}: a step() with no "
            f"backward() since the last one applies the same gradients again, where the reference "
            + ("steps once after each backward()" if rstep == rb else "never steps twice with no backward() between")
        )
    if _zero_between(ls) and not _zero_between(rs):
        return (
            f"your code calls zero_grad() between {loss}.backward() and {lopt}.step(): it wipes the gradients "
            f"backward() just computed, so step() has nothing to apply; clear them before the forward pass instead"
        )
    if (
        lz
        and rz
        and "B" in ls
        and "B" in rs
        and ls.index("B") < ls.index("Z")
        and rs.index("Z") < rs.index("B")
        and _added_up(learner)
    ):
        return (
            f"your code calls {lopt}.zero_grad() only after {loss}.backward(), where the reference calls it "
            f"first: that backward() added onto gradients already in .grad, left from before"
        )
    if rz and not lz and lb and _added_up(learner):
        return (
            f"the reference calls {opt}.zero_grad() before each of its {plural(rb, 'backward() call')}; "
            f"your code never calls it, so gradients add up across batches"
        )
    if rz >= rb and lz < lb and lz < rz and _added_up(learner):
        return (
            f"the reference calls {opt}.zero_grad() before each of its {plural(rb, 'backward() call')}; yours "
            f"calls it {_times(lz)} for {plural(lb, 'backward() call')}, so gradients add up between the clears"
        )
    if lb != rb:
        returned = sum(1 for e in _kinds(learner, "backward") if e.name == AUTOGRAD_GRAD)
        if returned:
            # torch.autograd.grad returns the gradients: nothing is added to a .grad
            return (
                f"the reference calls backward() {_times(rb)}; your code computes gradients {_times(lb)}, "
                f"{plural(returned, 'of them', 'of them')} with {AUTOGRAD_GRAD}, which returns them and adds nothing "
                f"to .grad"
                if returned != lb
                else f"the reference calls backward() {_times(rb)}; your code calls {AUTOGRAD_GRAD} {_times(lb)}, "
                f"which returns the gradients and adds nothing to .grad"
            )
        return f"the reference calls backward() {_times(rb)}; your code calls it {_times(lb)}" + (
            " (each call adds to .grad)" if lb > rb else ""
        )
    if lstep != rstep:
        return f"the reference calls {opt}.step() {_times(rstep)}; your code calls it {_times(lstep)}"
    return None


# ---------------------------------------------------------------- GradScaler

SCALER_KINDS = ("unscale", "scaler_step", "scaler_update")
AFTER_STEP = {
    "unscale": "unscale_() is being called after step()",
    "scaler_step": "step() has already been called since the last update()",
}


def _scaler_order(learner, ref=None, code=""):
    """On its face: a scaler's unscale_() or step() for an optimizer it already stepped, with
    no update() between (GradScaler keeps a state per optimizer that only update() resets)."""
    stepped: set = set()
    for e in learner:
        if e.kind == "scaler_update":
            stepped = {k for k in stepped if k[0] != e.info.get("sid")}
        elif e.kind in AFTER_STEP and e.info.get("enabled", True):  # a disabled scaler checks nothing
            key = (e.info.get("sid"), e.info.get("opt"))
            if key in stepped:
                s, o = e.name, e.info.get("of", "opt")
                again = "unscale_" if e.kind == "unscale" else "step"
                return (
                    f"your code calls {s}.{again}({o}) after {s}.step({o}) with no {s}.update() between: "
                    f"GradScaler wants update() after every step() (it adjusts the scale and readies the scaler "
                    f'for the next iteration), which is why that call raises "{AFTER_STEP[e.kind]}"'
                )
            if e.kind == "scaler_step":
                stepped.add(key)
    return None


def _letters(events) -> str:
    return "".join({"unscale": "U", "clip": "C", "scaler_step": "S"}.get(e.kind, "") for e in events)


def _scaler(learner, ref, code=""):
    """The reference's GradScaler protocol (backward through scale(loss), unscale_ before the
    gradients are clipped, step and update through the scaler) against the learner's."""
    if not _kinds(ref, *SCALER_KINDS):
        return None
    s = _first_name(learner, "scaler_step", None) or _first_name(ref, "scaler_step", "scaler")
    o = next((e.info["of"] for e in ref if e.kind == "scaler_step" and "of" in e.info), "opt")
    if _kinds(ref, "scaler_scale") and _kinds(learner, "backward") and not _kinds(learner, "scaler_scale"):
        never = _never(code, f"{s}.scale(loss)", "scale", on=s)
        return (
            f"the reference calls backward() on {s}.scale(loss); {never}, so backward() gives unscaled gradients, "
            f"and small float16 gradients can underflow to zero"
        )
    if _kinds(ref, "scaler_step") and not _kinds(learner, "scaler_step") and _kinds(learner, "step"):
        lo = _first_name(learner, "step", o)
        return (
            f"the reference steps through {s}.step({o}); your code calls {lo}.step() itself, so a step whose "
            f"gradients overflowed to inf or nan is applied instead of skipped"
        )
    rl, ll = _letters(ref), _letters(learner)
    if "UC" in rl and "C" in ll and "U" not in ll:
        never = _never(code, f"{s}.unscale_({o})", "unscale_", on=s)
        return (
            f"the reference calls {s}.unscale_({o}) before clip_grad_norm_; {never}, so clip_grad_norm_ measures "
            f"the gradients while they are still multiplied by the scale and clips them to a fraction of max_norm"
        )
    if "UC" in rl and "U" in ll and "C" in ll and ll.index("C") < ll.index("U"):  # its first clip came first
        return (
            f"your code clips the gradients before {s}.unscale_({o}): clip_grad_norm_ measured them still "
            f"multiplied by the scale; call unscale_ first, then clip"
        )
    if _kinds(ref, "scaler_update") and _kinds(learner, "scaler_step") and not _kinds(learner, "scaler_update"):
        never = _never(code, f"{s}.update()", "update", on=s)
        return (
            f"the reference calls {s}.update() after each {s}.step({o}); {never}, so the scale never changes: "
            f"it is not halved after an overflow nor grown after a run of good steps"
        )
    return None


# ---------------------------------------------------------------- modes


def _settled(events) -> list:
    """The modes set, a call that repeats the mode just set left out (it changes nothing)."""
    out: list = []
    for e in events:
        if not out or out[-1].info["mode"] != e.info["mode"]:
            out.append(e)
    return out


def _eval_effect(e, name: str) -> str:
    """What eval() changed in that module, by the layers it holds (both, where not recorded)."""
    layers = e.info.get("layers")
    layers = ["batch norm", "dropout"] if layers is None else layers
    said = {
        "dropout": "its dropout is off",
        "batch norm": "its batch norm uses its running statistics instead of the batch's (and stops updating them)",
    }
    if not layers:
        return f"after it, {name} is in eval mode, though it holds no dropout or batch norm that the mode changes"
    return "after it, " + " and ".join(said[k] for k in sorted(layers, reverse=True))


def _call_of(model: str, e) -> str:
    """How the code switched: model.eval(), model.train(), or model.train(False)."""
    if e.info.get("via") == "eval":
        return f"{model}.eval()"
    return f"{model}.train()" if e.info["mode"] else f"{model}.train(False)"


def _modes(learner, ref):
    lt, rt = _settled(_kinds(learner, "train")), _settled(_kinds(ref, "train"))
    if [e.info["mode"] for e in lt] == [e.info["mode"] for e in rt]:
        return None
    model = next((e.name for e in rt + lt if e.name), "model")
    r_eval = [e for e in rt if not e.info["mode"]]
    l_eval = [e for e in lt if not e.info["mode"]]
    if r_eval and not l_eval:
        return (
            f"the reference switches {model} to eval mode ({_call_of(model, r_eval[0])}, {_times(len(r_eval))}); "
            f"your code never does, so every forward pass there runs in training mode: dropout active, batch norm "
            f"normalising with (and updating) batch statistics"
        )
    trains_in_eval = _trains_in_eval(learner) and not _trains_in_eval(ref)
    if l_eval and _back_to_train(rt) > _back_to_train(lt) and trains_in_eval:
        return (
            f"your code calls {model}.eval() for evaluation but does not switch back with {model}.train() "
            f"afterwards (the reference does, {_times(_back_to_train(rt))}), so the training that follows runs "
            f"in eval mode: dropout off, batch-norm statistics frozen"
        )
    if r_eval and rt[-1].info["mode"] and lt and not lt[-1].info["mode"] and trains_in_eval:
        return (
            f"your code calls {model}.eval() but never {model}.train() afterwards; the reference switches back, "
            f"so your later training steps run in eval mode (dropout off, batch-norm statistics frozen)"
        )
    if l_eval and not r_eval and not rt:
        # The reference never switches a mode: it may have no such module at all.
        name = next((e.name for e in l_eval if e.name), model)
        return f"your code calls {name}.eval(), which the reference never calls: {_eval_effect(l_eval[0], name)}"
    if l_eval and not r_eval:
        name = next((e.name for e in l_eval if e.name), model)
        effect = _eval_effect(l_eval[0], name)
        return f"your code calls {name}.eval() where the reference stays in training mode: {effect}"
    for a, b in zip(lt, rt, strict=False):
        if a.info["mode"] != b.info["mode"]:
            if b.info["mode"]:
                return (
                    f"the reference puts {model} in training mode here ({model}.train()); your code calls "
                    f"{_call_of(model, a)}, which puts it in eval mode: dropout off, batch-norm statistics frozen"
                )
            return (
                f"the reference puts {model} in eval mode here ({_call_of(model, b)}); your code calls "
                f"{_call_of(model, a)}, which puts it in training mode: dropout active, batch norm on batch statistics"
            )
    if lt and rt and lt[-1].info["mode"] != rt[-1].info["mode"]:
        mine, theirs = ("training", "eval") if lt[-1].info["mode"] else ("eval", "training")
        return (
            f"your code leaves {model} in {mine} mode (its last switch is {_call_of(model, lt[-1])}); the reference "
            f"leaves it in {theirs} mode here ({_call_of(model, rt[-1])})"
        )
    r_train = [e for e in rt if e.info["mode"]]
    l_train = [e for e in lt if e.info["mode"]]
    if r_train and not l_train:
        return (
            f"the reference calls {model}.train() ({_times(len(r_train))}); your code never does, so the model "
            f"stays in whatever mode it was left in"
        )
    return None


def _trains_in_eval(events) -> bool:
    """Whether a backward() or step() ran after an eval() switch with no train() between."""
    in_eval = False
    for e in events:
        if e.kind == "train":
            in_eval = not e.info["mode"]
        elif e.kind in ("backward", "step") and in_eval:
            return True
    return False


def _back_to_train(events) -> int:
    """How often train() follows an eval()."""
    n, in_eval = 0, False
    for e in events:
        if not e.info["mode"]:
            in_eval = True
        elif in_eval:
            n, in_eval = n + 1, False
    return n


def _turns_requires_grad_off(code: str) -> bool:
    """Whether the learner's source calls ``requires_grad_(False)`` or assigns
    ``x.requires_grad = False``."""
    try:
        tree = ast.parse(code or "")
    except SyntaxError:
        return False
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "requires_grad_":
            given = n.args[0] if n.args else next((k.value for k in n.keywords if k.arg == "requires_grad"), None)
            if isinstance(given, ast.Constant) and given.value is False:
                return True
        if (
            isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Constant)
            and n.value.value is False
            and any(isinstance(t, ast.Attribute) and t.attr == "requires_grad" for t in n.targets)
        ):
            return True
    return False


def _switches_grad_for_good(code: str) -> bool:
    """Whether the learner's source calls ``set_grad_enabled(...)`` as a statement of its
    own, not as a ``with`` block's context manager (which switches back when it ends)."""
    try:
        tree = ast.parse(code or "")
    except SyntaxError:
        return False
    in_with = {
        id(item.context_expr) for n in ast.walk(tree) if isinstance(n, (ast.With, ast.AsyncWith)) for item in n.items
    }
    return any(
        isinstance(n, ast.Call)
        and id(n) not in in_with
        and (n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", None)) == "set_grad_enabled"
        for n in ast.walk(tree)
    )


def _grad_modes(learner, ref, code=""):
    kinds = ("no_grad", "inference_mode", "enable_grad", "set_grad_enabled")
    lk, rk = [e.kind for e in _kinds(learner, *kinds)], [e.kind for e in _kinds(ref, *kinds)]
    if lk == rk:
        return None
    if "inference_mode" in lk and "inference_mode" not in rk and "no_grad" in rk:
        return (
            "your code uses torch.inference_mode() where the reference uses torch.no_grad(): tensors made under "
            "inference_mode can never take part in autograd later (using one in a graph raises)"
        )
    off = ("no_grad", "inference_mode")
    if any(k in off for k in rk) and not any(k in off for k in lk):
        which = "torch.no_grad()" if "no_grad" in rk else "torch.inference_mode()"
        if _calls_in(code, "no_grad", "inference_mode"):
            # the block is there: the code around it never ran, which is the cause to find
            where = next((e.info["in"] for e in _kinds(ref, *off) if e.info.get("in")), None)
            inside = f" the one inside {where}()" if where else " one"
            return (
                f"your code contains a {which} block, but its run never entered it, where the reference's run "
                f"enters{inside}: the code around that block was never called, or returned before it"
            )
        if _switches_grad_for_good(code):
            # Nothing is recorded that way either; what differs is that no block ends it.
            return (
                f"the reference runs part of its work under a {which} block; your code switches autograd with "
                f"torch.set_grad_enabled() instead, which stays in effect after the code around it returns (until "
                f"something switches it back), where a block's switch ends with the block"
            )
        if _turns_requires_grad_off(code):
            # Nothing is recorded that way either: what it costs is that the tensors stay out of autograd.
            return (
                f"the reference runs part of its work under {which} (an update, an evaluation or a constant); your "
                f"code turns requires_grad off instead (requires_grad_(False) or .requires_grad = False): nothing is "
                f"recorded that way either, but those tensors stay out of autograd afterwards, no longer trained, "
                f"until requires_grad is turned back on"
            )
        return (
            f"the reference runs part of its work under {which} (an update, an evaluation or a constant); your code "
            f"never does, so where tensors that require grad take part, autograd records that work too: its results "
            f"require grad and keep a graph"
        )
    if any(k in off for k in lk) and not any(k in off for k in rk):
        return (
            "your code runs part of its work under torch.no_grad() where the reference does not: nothing computed "
            "there is recorded, so no gradient flows back through it"
        )
    return None


# ---------------------------------------------------------------- save / load


def _never(code: str, call: str, *names: str, on: str | None = None) -> str:
    """What a call the reference makes and the learner's run did not is: missing, or written
    and never reached (an earlier line raised, a branch or an early return skipped it)."""
    if _calls_in(code, *names, on=on):
        return f"your code's {call} is written but never ran here (something before it raised, or a branch skipped it)"
    return "your code never does"


def _save_load(learner, ref, code=""):
    ls, rs = _kinds(learner, "save"), _kinds(ref, "save")
    ll, rl = _kinds(learner, "load"), _kinds(ref, "load")
    r_what = [e.info["what"] for e in rs]
    l_what = [e.info["what"] for e in ls]
    if "module" in l_what and "module" not in r_what:
        return (
            "your code saves the whole module object (torch.save(model, ...)); the reference saves "
            "model.state_dict(): a pickled module needs its class to load, and torch.load(..., "
            "weights_only=True) refuses it"
        )
    if rs and ls and r_what != l_what:
        for r, lw in zip(r_what, l_what, strict=False):
            if r != lw:
                return f"your code saves {_article(lw)}, the reference saves {_article(r)}"
    if rs and not ls:
        return f"the reference calls torch.save {_times(len(rs))}; {_never(code, 'torch.save(...)', 'save')}"
    for r, lo in zip(rl, ll, strict=False):
        if r.info["weights_only"] is True and lo.info["weights_only"] is not True:
            how = "weights_only=False" if lo.info["weights_only"] is False else "no weights_only argument"
            return (
                f"the reference loads with torch.load(..., weights_only=True); yours passes {how}, so loading "
                f"a file can run arbitrary code hidden in it (and older torch releases default to that)"
            )
    if all(r.info["weights_only"] is True for r in rl):
        risky = [lo for lo in ll if lo.info["weights_only"] is not True]
        if risky:
            how = "weights_only=False" if risky[0].info["weights_only"] is False else "no weights_only argument"
            return (
                f"the reference loads with torch.load(..., weights_only=True); yours passes {how}, so loading "
                f"a file can run arbitrary code hidden in it (and older torch releases default to that)"
            )
    if rl and not ll:
        return f"the reference calls torch.load {_times(len(rl))}; {_never(code, 'torch.load(...)', 'load')}"
    return None


def _article(what: str) -> str:
    return {"state_dict": "a state_dict (a dict of tensors)", "module": "a whole module"}.get(what, f"a {what}")


# ---------------------------------------------------------------- devices, RNG, data, losses


def _moves(learner, ref):
    for e in _kinds(learner, "moved_leaf"):
        if not any(r.kind == "moved_leaf" and r.name == e.name for r in ref):
            return (
                f"{e.name} was created with requires_grad=True and then moved with .{e.info['method']}(): the moved "
                f"copy is not a leaf, so backward() leaves its .grad empty and an optimizer would update the "
                f"original; create it where it belongs (torch.randn(..., device=DEVICE, requires_grad=True)) "
                f"or call .requires_grad_() after moving"
            )
    rm = {e.name for e in _kinds(ref, "move") if e.info.get("module")}
    lm = {e.name for e in _kinds(learner, "move") if e.info.get("module")}
    missing = sorted(rm - lm)
    if missing and not lm:
        return f"the reference moves {missing[0]} to the device with .to(DEVICE); your code never moves it"
    return None


def _seeds(learner, ref):
    lseeds = [(e.name, e.info.get("value")) for e in _kinds(learner, "seed")]
    rseeds = [(e.name, e.info.get("value")) for e in _kinds(ref, "seed")]
    if lseeds == rseeds:
        return None
    for fn, value in rseeds:
        mine = [v for f, v in lseeds if f == fn]
        if not mine:
            return f"the reference calls {fn}({value!r}); your code never does, so those random numbers are not reproducible"
        if value not in mine:
            return f"the reference calls {fn}({value!r}); yours calls {fn}({mine[0]!r})"
    for fn, value in lseeds:
        if fn not in [f for f, _ in rseeds]:
            return (
                f"your code calls {fn}({value!r}) where the reference does not: reseeding the global generator "
                f"changes every random number drawn after it"
            )
    return None


def _seed_order(learner, ref):
    """A draw (a layer's initial weights, say) before the first torch.manual_seed."""

    def drawn_before_seed(events):
        before = None
        for e in events:
            if e.kind == "draw" and before is None:
                before = e
            elif e.kind == "seed" and e.name == "torch.manual_seed":
                return before
        return None

    mine = drawn_before_seed(learner)
    if mine is None or drawn_before_seed(ref) is not None or not any(e.kind == "seed" for e in ref):
        return None
    what = "a layer's initial weights" if mine.name.startswith("nn.init") else f"{mine.name}(...)"
    return (
        f"your code draws random numbers ({what}) before it calls torch.manual_seed(...); the reference seeds "
        f"first: draws made before the seed are not reproducible, and the ones after it come in another order "
        f"than the reference's (initial weights, shuffles, dropout masks)"
    )


def _draws(learner, ref):
    ld, rd = _kinds(learner, "draw"), _kinds(ref, "draw")
    lkey = [(e.name, e.info.get("generator")) for e in ld]
    rkey = [(e.name, e.info.get("generator")) for e in rd]
    if lkey == rkey:
        return None
    r_gen = [e for e in rd if e.info.get("generator")]
    l_gen = [e for e in ld if e.info.get("generator")]
    if r_gen and len(l_gen) < len(r_gen):
        return (
            f"the reference passes its own torch.Generator to {r_gen[0].name}(..., generator=g); your code draws "
            f"from the global generator, which changes every random number drawn after it (and depends on them)"
        )
    lnames, rnames = [e.name for e in ld], [e.name for e in rd]
    i = next((i for i, (a, b) in enumerate(zip(lnames, rnames, strict=False)) if a != b), None)
    if i is None:
        return None  # a different number of draws alone is too weak a sign: extra code draws too
    if len(lnames) == len(rnames) and sorted(lnames) == sorted(rnames):
        return (
            f"random numbers are drawn in a different order: the reference's draw #{i + 1} is {rnames[i]}(...), "
            f"yours is {lnames[i]}(...), so every random number after it differs"
        )
    if lnames[:i] + lnames[i + 1 :] == rnames:
        return (
            f"your code makes a draw the reference does not: #{i + 1}, {lnames[i]}(...), so every random number "
            f"drawn after it differs from the reference's"
        )
    if rnames[:i] + rnames[i + 1 :] == lnames:
        return (
            f"your code leaves out the reference's draw #{i + 1}, {rnames[i]}(...), so every random number drawn "
            f"after it differs from the reference's"
        )
    if len(lnames) == len(rnames):
        # The same number of draws in the same places, one made by another function: not an
        # order, and the numbers after it may well match (normal_ with the right std is kaiming_normal_).
        return (
            f"your draw #{i + 1} is {lnames[i]}(...) where the reference's is {rnames[i]}(...): another function "
            f"draws from another distribution or scale unless its arguments make them the same"
        )
    return None


def _loaders(learner, ref):
    for le, re_ in zip(_kinds(learner, "loader"), _kinds(ref, "loader"), strict=False):
        for key, what in (
            ("shuffle", "shuffle"),
            ("generator", "generator"),
            ("batch_size", "batch_size"),
            ("drop_last", "drop_last"),
            ("num_workers", "num_workers"),
        ):
            a, b = le.info.get(key), re_.info.get(key)
            if a == b:
                continue
            if key == "generator":
                if b and le.info.get("sampler"):
                    return (
                        f"the reference's DataLoader shuffles with a seeded torch.Generator; your "
                        f"{le.info['sampler']} has no generator=, so its order comes from the global generator "
                        f"and changes with every draw before it"
                    )
                if b:
                    return (
                        "the reference gives its DataLoader a seeded torch.Generator (generator=g); yours has none, "
                        "so its shuffle order comes from the global generator and changes with every draw before it"
                    )
                return "your DataLoader gets a generator= where the reference's draws from the global generator"
            if key == "shuffle" and le.info.get("sampler"):
                # shuffle=True beside a sampler= raises: the order is the sampler's to give
                how = "in random order" if b else "in order"
                return (
                    f"the reference's DataLoader draws the examples {how} (shuffle={b!r}); yours takes its order "
                    f"from its sampler={le.info['sampler']}(...)"
                )
            return f"the reference builds its DataLoader with {what}={b!r}; yours has {what}={a!r}"
    if _kinds(ref, "loader") and not _kinds(learner, "loader"):
        return "the reference builds a torch.utils.data.DataLoader; your code never does"
    return None


def _variances(learner, ref):
    lv = sorted(e.info["correction"] for e in _kinds(learner, "variance"))
    rv = sorted(e.info["correction"] for e in _kinds(ref, "variance"))
    if lv == rv or not rv or not lv:
        return None
    # One kind in place of the other: more of one and fewer of the other. A call more or
    # less of the same kind is other code that computes a variance too, not this cause.
    if rv.count(1.0) > lv.count(1.0) and lv.count(0.0) > rv.count(0.0):
        return (
            "the reference computes an unbiased variance (divides by n - 1: var()/std() with their default "
            "correction=1) where yours uses the biased one (unbiased=False, divides by n)"
        )
    if lv.count(1.0) > rv.count(1.0) and rv.count(0.0) > lv.count(0.0):
        return (
            "the reference computes a biased variance (unbiased=False / correction=0, divides by n) where yours "
            "uses the unbiased default (divides by n - 1)"
        )
    return None


def _broadcasts(learner, ref):
    theirs = {(e.name, e.info["a"], e.info["b"]) for e in _kinds(ref, "broadcast")}
    for e in _kinds(learner, "broadcast"):
        if (e.name, e.info["a"], e.info["b"]) not in theirs:
            a, b, out = (
                str(e.info[k]).replace(",)", ")") if len(e.info[k]) != 1 else str(e.info[k]) for k in ("a", "b", "out")
            )
            return (
                f"your code combines tensors of shapes {a} and {b} with {e.name}, which broadcasts them to {out}: "
                f"every element meets every other, where the reference pairs them one to one; make the shapes "
                f"match first (squeeze(1), unsqueeze, or view(-1))"
            )
    return None


def _values(values) -> str:
    shown = [str(v) for v in values]
    if len(shown) == 1:
        return shown[0]
    return ", then ".join(shown[:4]) + (f", ... ({len(shown)} calls)" if len(shown) > 4 else "")


def _settings(learner, ref, code=""):
    """A process-wide switch (deterministic algorithms, the default dtype) the reference sets
    during the same check call to values the learner's code never gives it, or leaves at
    another value."""
    for name in dict.fromkeys(e.name for e in _kinds(ref, "setting")):
        theirs = [e.info.get("value") for e in ref if e.kind == "setting" and e.name == name]
        mine = [e.info.get("value") for e in learner if e.kind == "setting" and e.name == name]
        if mine == theirs:
            continue
        where = next((e.info["in"] for e in ref if e.kind == "setting" and e.name == name and "in" in e.info), None)
        said = f"the reference's {where}() calls" if where else "the reference calls"
        said = f"{said} {name}(...) with {_values(theirs)}"
        if not mine:
            return f"{said}; {_never(code, name + '(...)', name.rpartition('.')[2])}"
        missing = [v for v in dict.fromkeys(theirs) if v not in mine]
        if missing:
            only = " only" if len(mine) == 1 else ""
            return f"{said}; yours with {_values(mine)}{only}, never with {missing[0]}"
        if mine[-1] != theirs[-1]:
            return f"{said}; yours with {_values(mine)}, so it is left at {mine[-1]}, not {theirs[-1]}"
    return None


def _state_loads(learner, ref, code=""):
    # By kind (a model, an optimizer), not name: a function's arguments may be named otherwise.
    mine = {e.info.get("what") or e.name for e in _kinds(learner, "load_state")}
    for e in _kinds(ref, "load_state"):
        if (e.info.get("what") or e.name) not in mine:
            return _state_load_missing(e.name, code)
    return None


def _state_load_missing(name: str, code: str, where: str = "the reference") -> str:
    if name == "torch.set_rng_state":
        never = _never(code, "torch.set_rng_state(...)", "set_rng_state")
        return (
            f"{where} calls torch.set_rng_state(...); {never}, so the random numbers drawn after it are not "
            f"the ones the saved state would give"
        )
    never = _never(code, "load_state_dict(...)", "load_state_dict", on=name)
    return f"{where} calls {name}.load_state_dict(...); {never}, so {name} keeps the state it had"


def _state_loads_in_functions(learner, ref, code=""):
    """A kind of state (a model's, an optimizer's, a scheduler's, the generator's) that the
    reference's function restores in some call, where the learner's function of that name ran
    and nothing in the learner's run restores that kind at all. Over the whole run, because a
    check may hold an authored expected value (no reference call to compare with) while
    another check ran the reference's function; by kind, not name, because the learner's
    function may name its arguments otherwise."""
    ran = {e.info.get("in") for e in learner} - {None}
    restored = {e.info.get("what") or e.name for e in _kinds(learner, "load_state")}
    for e in _kinds(ref, "load_state"):
        function = e.info.get("in")
        if function in ran and (e.info.get("what") or e.name) not in restored:
            return _state_load_missing(e.name, code, f"the reference's {function}()")
    return None


def _losses(learner, ref):
    for e in _kinds(learner, "ce_probs"):
        if not any(r.kind == "ce_probs" for r in ref):
            if e.name == "nll_loss" and e.info.get("looks") == "log-probabilities along dim 0":
                return (
                    "F.nll_loss (or nn.NLLLoss) received log-probabilities taken down each column, over the batch "
                    "(a log_softmax along dim 0): it wants each row's log-probabilities over the classes, "
                    "F.log_softmax(logits, dim=1)"
                )
            if e.name == "nll_loss":
                return (
                    "F.nll_loss (or nn.NLLLoss) received values that are not log-probabilities: it expects "
                    "F.log_softmax(logits, dim=1), not logits or probabilities"
                )
            if e.info.get("looks") == "probabilities along dim 0":
                return (
                    "the cross-entropy loss received values that sum to 1 down each column, over the batch (a "
                    "softmax along dim 0): nn.CrossEntropyLoss and F.cross_entropy apply log_softmax themselves, "
                    "along the classes, and want the raw logits; drop the softmax"
                )
            return (
                "the cross-entropy loss received probabilities (each row sums to 1): nn.CrossEntropyLoss and "
                "F.cross_entropy apply log_softmax themselves and want the raw logits; drop the softmax"
            )
    return None


RULES = (
    (_losses, None),
    (_scaler_order, None),
    (_scaler, None),
    (_optimizer, TOPIC_ZERO_GRAD),
    (_modes, None),
    (_grad_modes, TOPIC_GRAD_MODE),
    (_moves, None),
    (_save_load, None),
    (_loaders, None),
    (_seed_order, None),
    (_seeds, None),
    (_draws, None),
    (_variances, None),
    (_state_loads, None),
    (_settings, None),
    (_broadcasts, None),
)

ONE_SIDED = ((_losses, None), (_scaler_order, None), (_moves, None))
# Save/load are judged over the whole run too: a check may compare a loaded model with a
# value the reference computes without loading anything.
WHOLE_RUN = ((_save_load, None), (_state_loads_in_functions, None))
# A whole-run rule that says again what a per-check rule said
SAID_BY = {_state_loads_in_functions: _state_loads}


def _whole(tracer, side: str) -> list:
    stopped = {segment for _, segment in tracer.stopped}
    return [
        e
        for (s, segment), events in sorted(tracer.traces.items(), key=lambda kv: str(kv[0]))
        if s == side and segment not in stopped
        for e in events
    ]


def _topic(rule, sentence: str, topic):
    if rule is not _optimizer:
        return topic
    if "zero_grad" in sentence:
        return TOPIC_ZERO_GRAD
    return "backward_count" if sentence.startswith("the reference calls backward()") else None


# Where the exercise's authored mistakes call the learner's code: the reference never runs
# there, so nothing there is compared.
MISTAKES = "mistakes"


def _pairs(learner, ref) -> list:
    """What is compared with what: each numbered call of a function check with the
    reference's call on the same inputs (a call only one side made is compared with
    nothing), else the two sides' whole segments."""
    lc: dict = {}
    rc: dict = {}
    for events, by in ((learner, lc), (ref, rc)):
        for e in events:
            by.setdefault(e.info.get("call"), []).append(e)
    if set(lc) | set(rc) <= {None}:
        return [(learner, ref)]
    calls = sorted({k for k in (*lc, *rc) if k is not None})
    return [(lc.get(None, []), rc.get(None, []))] + [(lc.get(k, []), rc.get(k, [])) for k in calls]


def _like_runs(learner, ref, functions) -> tuple:
    """The code's run and the reference's, without the calls the code's run made inside a
    function the reference defines but its run never calls (a learner trying out the
    function the checks will call, where the reference only defines it). Calls the
    reference's run makes inside its own functions stay: the code may do the same work
    another way (in a function of its own, or inline), and without them the reference
    would seem to make none."""

    def inside(events):
        return {e.info.get("in") for e in events} - {None}

    tried = (inside(learner) - inside(ref)) & set(functions)
    return [e for e in learner if e.info.get("in") not in tried], ref


# Rules that also read the learner's source: a call written but never run is another cause
# than a call missing.
READS_CODE = (_optimizer, _grad_modes, _save_load, _state_loads, _scaler, _settings)


def _first(pairs, rules, code=""):
    for learner, ref in pairs:
        for rule, topic in rules:
            sentence = rule(learner, ref, code) if rule in READS_CODE else rule(learner, ref)
            if sentence:
                return rule, topic, sentence
    return None


def differences(tracer, skip=(), failed=None, functions=(), code="") -> list:
    """[(sentence, topic)]: the first meaningful difference of each segment, in order, once
    each. Only like is compared with like: the same check's calls on both sides, call by call;
    with ``failed`` (the indexes of the checks that failed) only those checks and the run;
    ``functions``: the names of the functions the reference defines (see _like_runs);
    ``code``: the learner's source."""
    out, used = [], set()
    for segment in tracer.segments():
        if segment in skip or segment == MISTAKES:
            continue
        if failed is not None and isinstance(segment, int) and segment not in failed:
            continue  # a check that passed: how its calls differ caused nothing
        learner, ref = tracer.events("learner", segment), tracer.events("ref", segment)
        both = ("ref", segment) in tracer.ran and ("learner", segment) in tracer.ran
        if both and (("learner", segment) in tracer.stopped or ("ref", segment) in tracer.stopped):
            # The check's expression raised part-way (the learner's function hit an EOFError
            # before its load_state_dict): a call one side lacks after that point was never
            # reached, so the two are not compared (what one side did on its face still counts).
            ref, both = [], False
        if segment == "run" and both:
            learner, ref = _like_runs(learner, ref, functions)
        # One side only (a python check runs the learner's side alone, an authored expected
        # value runs no reference): nothing to compare, only what is wrong on its face.
        found = _first(_pairs(learner, ref) if both else [(learner, [])], RULES if both else ONE_SIDED, code)
        if found:
            rule, topic, sentence = found
            if rule not in used:  # the first segment's numbers say it; later ones repeat it
                used.add(rule)
                out.append((sentence, _topic(rule, sentence, topic)))
    for rule, topic in WHOLE_RUN:
        if rule not in used and SAID_BY.get(rule) not in used:
            sentence = rule(_whole(tracer, "learner"), _whole(tracer, "ref"), code)
            if sentence:
                out.append((sentence, topic))
    return out


def direct_forward(code: str, solution: str) -> str | None:
    """The learner calls ``model.forward(x)`` where the reference calls ``model(x)``."""

    def forwards(src):
        try:
            tree = ast.parse(src or "")
        except SyntaxError:
            return []
        return [
            ast.unparse(n.func.value)
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "forward"
        ]

    mine, theirs = forwards(code), forwards(solution)
    extra = [m for m in mine if m not in theirs and m != "super()"]
    if extra:
        return (
            f"your code calls {extra[0]}.forward(...) directly; call {extra[0]}(...) instead: __call__ runs "
            f"the module's hooks around forward, and a direct call skips them"
        )
    return None


def never_freezes(code: str, solution: str) -> str | None:
    """The reference freezes a module or tensor with ``X.requires_grad_(False)`` and the
    learner's source never sets requires_grad at all (no assignment to it, no requires_grad_
    call, no requires_grad= keyword; reading it sets nothing): it freezes nothing that way. A
    call of ``.requires_grad(False)`` is an attempt that raised: its error says more."""
    try:
        mine, theirs = ast.parse(code or ""), ast.parse(solution or "")
    except SyntaxError:
        return None
    if any(
        (isinstance(n, ast.Attribute) and n.attr == "requires_grad" and not isinstance(n.ctx, ast.Load))
        or (isinstance(n, ast.Attribute) and n.attr == "requires_grad_")
        or (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "requires_grad")
        or (isinstance(n, ast.keyword) and n.arg == "requires_grad")
        or (isinstance(n, ast.Constant) and n.value in ("requires_grad", "requires_grad_"))  # setattr(p, ...)
        for n in ast.walk(mine)
    ):
        return None
    for n in ast.walk(theirs):
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "requires_grad_"
            and len(n.args) == 1
            and isinstance(n.args[0], ast.Constant)
            and n.args[0].value is False
        ):
            frozen = ast.unparse(n.func.value)
            return (
                f"the reference freezes {frozen} with {frozen}.requires_grad_(False); your code never sets "
                f"requires_grad anywhere, so {frozen}'s parameters still require grad: they get gradients, and an "
                f"optimizer that holds them updates them"
            )
    return None
