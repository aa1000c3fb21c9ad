"""module and state_dict checks: what an nn.Module registered, and whether it survives
a save / load round trip."""

import io

import torch

from .. import signatures
from ..compare import tolerance, value_problems
from ..context import Context, Outcome, display
from ..describe import exception_phrase, fmt_int, join_names, plural, short_repr, type_phrase
from ..registration import plain_tensor_at, unregistered


def _module_or_outcome(value, name: str):
    if isinstance(value, torch.nn.Module):
        return value, None
    record = getattr(type(value), "learner_class", None) and value.learner_class  # a class in the learner's kernel
    if record:
        cls = record
        message = f"{name} is the class {cls}, not an instance: create one with {cls}(...)"
    elif isinstance(value, type) and issubclass(value, torch.nn.Module):
        message = f"{name} is the class {value.__name__}, not an instance: create one with {value.__name__}(...)"
    else:
        message = f"{name} is {type_phrase(value)}, expected an nn.Module"
    return None, Outcome(False, message, "an nn.Module", short_repr(value))


def _name_set_problems(name: str, what: str, actual: list, expected: list, model, plain) -> list:
    missing = [n for n in expected if n not in actual]
    extra = sorted(n for n in set(actual) - set(expected))
    out = []
    for n in missing:
        if plain_tensor_at(model, n):
            out.append(signatures.plain_tensor(f"{name}.{n}"))
    # names under a plain list of layers are explained by that list's own message
    containers = [u for u in plain if u.kind == "modules"]
    for u in containers:
        prefix = u.path[len(name) + 1 :] + "."
        if any(n.startswith(prefix) for n in missing) and u.message not in out:
            out.append(u.message)
    missing = [
        n
        for n in missing
        if not plain_tensor_at(model, n) and not any(n.startswith(u.path[len(name) + 1 :] + ".") for u in containers)
    ]
    if missing:
        out.append(f"{name} is missing the {what} {join_names(missing)}")
    if extra:
        out.append(f"{name} has unexpected {what} {join_names(extra)}")
    return out


def check_module(check: dict, ctx: Context) -> Outcome:
    expr = check["expr"]
    name = ctx.display(expr, "the model")
    model, early = _module_or_outcome(ctx.eval_learner(expr), name)
    if early:
        return early
    plain = unregistered(model, name)
    plain_lists = [u for u in plain if u.kind == "modules"]
    for u in plain_lists:
        ctx.note(u.message)  # a plain list of layers is always a bug
    problems, passed = [], []
    expected_out, actual_out = [], []

    total = sum(p.numel() for p in model.parameters())
    if check.get("parameters") is not None:
        want = check["parameters"]
        if total != want:
            sentence = f"{name} has {plural(total, 'parameter')}, expected {fmt_int(want)}"
            if plain_lists:
                sentence += ": " + "; ".join(u.message for u in plain_lists)
            problems.append(sentence)
        else:
            passed.append(plural(total, "parameter"))
        expected_out.append(f"{fmt_int(want)} parameters")
        actual_out.append(f"{fmt_int(total)} parameters")

    if check.get("trainable") is not None:
        want = check["trainable"]
        trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        if trainable != want:
            sentence = (
                f"{name} has {fmt_int(trainable)} trainable parameters (requires_grad=True), expected {fmt_int(want)}"
            )
            if trainable < want <= total:
                sentence += ": some parameters are frozen (requires_grad is False)"
            elif trainable > want and check.get("parameters") == total:
                sentence += ": freeze the others with .requires_grad_(False)"
            problems.append(sentence)
        else:
            passed.append(f"{fmt_int(trainable)} trainable")
        expected_out.append(f"{fmt_int(want)} trainable")
        actual_out.append(f"{fmt_int(trainable)} trainable")

    for key, what, names in (
        ("parameter_names", "parameters", lambda: [n for n, _ in model.named_parameters()]),
        ("buffer_names", "buffers", lambda: [n for n, _ in model.named_buffers()]),
    ):
        if check.get(key) is None:
            continue
        actual_names = names()
        found = _name_set_problems(name, what, actual_names, list(check[key]), model, plain)
        problems.extend(found)
        if not found:  # names only, not their shapes: said so
            passed.append(f"the expected {what[:-1]} names")
        expected_out.append(f"{what}: {join_names(sorted(check[key])) or 'none'}")
        actual_out.append(f"{what}: {join_names(sorted(actual_names)) or 'none'}")

    if check.get("training") is not None:
        want = bool(check["training"])
        if model.training != want:
            call = "train()" if want else "eval()"
            problems.append(f"{name}.training is {model.training}, expected {want}: call {name}.{call}")
        else:
            passed.append("train mode" if want else "eval mode")
        expected_out.append(f"training={want}")
        actual_out.append(f"training={model.training}")

    if check.get("no_plain_tensors", True):
        for u in plain:
            if not any(u.message in p for p in problems):
                problems.append(u.message)
        if not plain:
            passed.append("every tensor registered")

    unique: list[str] = []  # a plain-list message can explain several facts: say it once
    for p in problems:
        if not any(p in q for q in unique):
            unique.append(p)
    problems = unique
    details = {"parameters": total, "unregistered": [u.path for u in plain]}
    if problems:
        return Outcome(
            False,
            "; ".join(problems),
            "; ".join(expected_out) or None,
            "; ".join(actual_out) or None,
            {**details, "problems": problems},
        )
    return Outcome(
        True,
        f"✓ {name} has {join_names(passed, limit=12)}" if passed else f"✓ {name} is an nn.Module",
        "; ".join(expected_out) or None,
        "; ".join(actual_out) or None,
        details,
    )


def _modes(model: torch.nn.Module) -> dict:
    return {m: m.training for m in model.modules()}


def _restore_modes(modes: dict) -> None:
    # train(mode) through the module's own method: a learner's module in the learner's kernel
    # is set there (parents come first in modes, so each child gets its own flag last).
    for m, training in modes.items():
        if m.training != training or hasattr(m, "remote_hooks"):
            m.train(training)


def _first_device(model: torch.nn.Module):
    for t in model.parameters():
        return t.device
    for b in model.buffers():
        return b.device
    return None


def _to(value, device):
    if device is None:
        return value
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(_to(v, device) for v in value)
    return value


def _run(model, probe):
    with torch.no_grad():
        if isinstance(probe, tuple):
            return model(*_to(probe, _first_device(model)))
        return model(_to(probe, _first_device(model)))


def _cpu(value):
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, (list, tuple)):
        return type(value)(_cpu(v) for v in value)
    return value


def check_state_dict(check: dict, ctx: Context) -> Outcome:
    expr = check["expr"]
    name = ctx.display(expr, "the model")
    model, early = _module_or_outcome(ctx.eval_learner(expr), name)
    if early:
        return early
    plain = unregistered(model, name)
    for u in plain:
        if u.kind == "modules":
            ctx.note(u.message)
    state = model.state_dict()
    keys = list(state)
    problems = []

    if check.get("keys") is not None:
        want = list(check["keys"])
        missing = [k for k in want if k not in state]
        extra = [k for k in keys if k not in want]
        for k in missing:
            if plain_tensor_at(model, k):
                message = signatures.plain_tensor(f"{name}.{k}")
                ctx.note(message)
                problems.append(message)
        unexplained = [k for k in missing if not plain_tensor_at(model, k)]
        if unexplained:
            problems.append(f"{name}.state_dict() is missing {join_names(unexplained)}")
        if extra:
            problems.append(f"{name}.state_dict() has unexpected keys {join_names(extra)}")

    details = {"keys": keys}
    if problems:
        return Outcome(False, "; ".join(problems), join_names(check["keys"]), join_names(keys), details)

    buffer = io.BytesIO()
    try:
        torch.save(state, buffer)
        buffer.seek(0)
        loaded = torch.load(buffer, weights_only=True)
    except Exception as exc:
        return Outcome(
            False,
            f"{name}.state_dict() could not be saved and loaded with weights_only=True "
            f"({exception_phrase(exc)}): keep only tensors in it",
            details=details,
        )

    factory = check["factory"]
    fresh, early = _module_or_outcome(ctx.eval_learner(factory), f"a fresh {display(factory, 'instance')}")
    if early:
        return early
    try:
        fresh.load_state_dict(loaded)
    except Exception as exc:
        return Outcome(
            False,
            f"the saved state_dict does not load into a fresh {display(factory)}: {exception_phrase(exc, 300)}",
            details=details,
        )

    modes = _modes(model)
    try:
        model.eval()
        fresh.eval()
        probe = ctx.eval_learner(check["probe"])
        original = _cpu(_run(model, probe))
        restored = _cpu(_run(fresh, probe))
    finally:
        _restore_modes(modes)  # a check must not leave the learner's model in eval mode
    same_device = _first_device(model) == _first_device(fresh)
    tol = tolerance(1e-6, 1e-7) if same_device else tolerance(1e-3, 1e-5)
    diff = value_problems(restored, original, "the restored model's output", tol)
    if diff:
        sentence = "the restored model's output differs from the original's on the probe: " + "; ".join(
            p.sentence for p in diff
        )
        lost = [u for u in plain if u.kind == "tensor"]
        for u in lost:
            ctx.note(u.message)
        if lost:
            sentence += "; " + "; ".join(u.message for u in lost)
        return Outcome(
            False, sentence, diff[0].expected, diff[0].actual, {**details, "problems": [p.sentence for p in diff]}
        )
    return Outcome(
        True,
        f"✓ {name} restored from its state_dict ({plural(len(keys), 'key')}) gives the same output on the probe",
        details=details,
    )
