"""value, tensor and same_as_solution checks: a learner's values against expected ones."""

import re

import numpy as np
import torch

from .. import wire
from ..compare import (
    Problem,
    describe_match,
    shares_storage,
    tensor_problems,
    tolerance,
    value_problems,
    with_strict_types,
)
from ..context import AuthoringError, Context, Outcome, display
from ..describe import join_names, short_repr, type_phrase
from ..guard import scan


def problem_details(problems) -> dict:
    return {
        "problems": [
            {
                "property": p.prop,
                "expected": p.expected,
                "actual": p.actual,
                "message": p.sentence,
                **({"data": p.data} if p.data else {}),
            }
            for p in problems
        ]
    }


def failed(problems, expected=None, actual=None, extra: dict | None = None) -> Outcome:
    details = problem_details(problems)
    details.update(extra or {})
    return Outcome(
        False,
        "; ".join(p.sentence for p in problems),
        expected if expected is not None else problems[0].expected,
        actual if actual is not None else problems[0].actual,
        details,
    )


def check_value(check: dict, ctx: Context) -> Outcome:
    expr = check["expr"]
    name = ctx.display(expr)
    actual = ctx.eval_learner(expr)
    # An authored expected value runs no reference code: no reference trace for this check.
    expected = ctx.eval_ref(check.get("expected") or expr, traced=not check.get("expected"))
    problems = value_problems(actual, expected, name, tolerance(check.get("rtol"), check.get("atol")))
    if check.get("strict_types"):
        problems = with_strict_types(problems, actual, expected, name)
    ctx.absorb(problems)
    shown_actual, shown_expected = short_repr(actual), short_repr(expected)
    if problems:
        ctx.failed_values[name] = (actual, expected)
        return failed(problems, shown_expected, shown_actual)
    shown = short_repr(actual, 80)
    message = f"✓ {name} is {shown}" if len(shown) < 80 else f"✓ {name} has the expected value"
    return Outcome(True, message, shown_expected, shown_actual)


def _as_expected_tensor(value, expr: str) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value
    try:
        return torch.as_tensor(value)
    except Exception:
        raise AuthoringError(f"the expected value ({display(expr)}) is {type_phrase(value)}, not a tensor") from None


def _not_a_tensor(actual, name: str) -> Outcome:
    message = f"{name} is {type_phrase(actual)}, expected a tensor"
    if isinstance(actual, np.ndarray):
        message += " (convert it with torch.from_numpy or torch.as_tensor)"
    elif isinstance(actual, tuple) and actual and all(isinstance(a, torch.Tensor) for a in actual):
        # several results of one call (torch.std_mean, torch.max(x, dim)), not numbers to build from
        message += f" (a tuple of {len(actual)} tensors, as a function that returns several results gives: unpack it)"
    elif isinstance(actual, (list, tuple)) and not any(isinstance(a, torch.Tensor) for a in actual):
        message += " (build it with torch.tensor(...))"
    return Outcome(False, message, "a tensor", short_repr(actual))


def check_tensor(check: dict, ctx: Context) -> Outcome:
    expr = check["expr"]
    name = ctx.display(expr)
    actual = ctx.eval_learner(expr)
    expected_expr = check.get("expected") or expr
    expected = _as_expected_tensor(ctx.eval_ref(expected_expr, traced=not check.get("expected")), expected_expr)
    if not isinstance(actual, torch.Tensor):
        return _not_a_tensor(actual, name)
    compare = check.get("compare") or ["shape", "dtype", "device", "values"]
    problems = tensor_problems(
        actual,
        expected,
        name,
        compare,
        tolerance(check.get("rtol"), check.get("atol")),
        broadcast=bool(check.get("broadcast")),
        sources=reference_tensors(ctx),
    )
    if problems:
        ctx.failed_values[name] = (actual, expected)
    relations = []
    for key, must_share in (("shares_storage_with", True), ("independent_of", False)):
        base_expr = check.get(key)
        if not base_expr:
            continue
        # a setup's private name here stands for the setup's own tensor, whatever the code bound
        base_name = display(base_expr, fallback="the setup's own tensor")
        base = ctx.eval_learner(base_expr)
        if not isinstance(base, torch.Tensor):
            problems.append(_relation_problem(f"{base_name} is {type_phrase(base)}, not a tensor"))
            continue
        shared = shares_storage(actual, base)
        if must_share and not shared:
            kind = "contiguous copy" if actual.is_contiguous() else "copy"
            problems.append(
                _relation_problem(
                    f"{name} is a {kind}, not a view of {base_name}: a view shares its memory; "
                    f".contiguous(), .clone() and .reshape() of a non-contiguous tensor make copies",
                    f"a view of {base_name}",
                    f"a {kind}",
                )
            )
        elif not must_share and shared:
            # Said as a fact, not as the fix: a view of the wrong values (a.view(-1) where t's
            # order was meant) is not mended by copying it.
            problems.append(
                _relation_problem(
                    f"{name} shares memory with {base_name} (it is a view), expected an independent copy "
                    "(.clone() makes one)",
                    f"independent of {base_name}",
                    f"a view of {base_name}",
                )
            )
        else:
            relations.append(f"a view of {base_name}" if must_share else f"independent of {base_name}")
    graph = graph_problems(actual, name, check.get("graph_with") or [], check.get("graph_without") or [])
    problems += graph
    if not graph and check.get("graph_with"):
        relations.append("computed through " + join_names([" or ".join(op.split("|")) for op in check["graph_with"]]))
    ctx.absorb(problems)
    if problems:
        return failed(problems)
    message = f"✓ {name} has {describe_match(actual, compare)}"
    if relations:
        message += " and is " + join_names(relations)
    return Outcome(True, message, short_repr(expected), short_repr(actual))


def _op_matches(node: str, op: str) -> bool:
    return node == op or re.fullmatch(re.escape(op) + r"(Backward\d*)?", node) is not None


def graph_problems(t: torch.Tensor, name: str, must: list, must_not: list) -> list:
    """What the autograd graph of ``t`` says about the operations that computed it: each op in
    ``must_not`` it was computed through, each op in ``must`` it was not. Read from the graph
    (its nodes' class names), so a call whose result the code dropped, or a library result
    renamed, reads as what it is."""
    if not must and not must_not:
        return []
    nodes = wire.graph_ops(t) or []
    out = []
    for op in must_not:
        hit = next((n for n in nodes if _op_matches(n, op)), None)
        if hit:
            out.append(
                Problem(
                    "graph",
                    f"{name} was computed through {op} (its autograd graph holds {hit}), which this check does not allow",
                    f"no {op}",
                    hit,
                )
            )
    missing = [
        " or ".join(op.split("|"))
        for op in must
        if not any(_op_matches(n, alt) for n in nodes for alt in op.split("|"))
    ]
    if missing and not nodes:
        out.append(
            Problem(
                "graph",
                f"{name} has no autograd graph (its grad_fn is None), so it was not computed through "
                f"{join_names(missing)} from a tensor that requires grad: it is a copy, detached, or made "
                "from plain numbers",
                f"computed through {join_names(missing)}",
                "no graph",
            )
        )
    elif missing:
        out.append(
            Problem(
                "graph",
                f"{name} was not computed through {join_names(missing)}: its autograd graph holds "
                f"{join_names(nodes[:8])}{' ...' if len(nodes) > 8 else ''}",
                f"computed through {join_names(missing)}",
                ", ".join(nodes[:8]),
            )
        )
    return out


def reference_tensors(ctx: Context) -> list:
    """The reference's tensors and NumPy arrays, by name: what an expected value may be a reduction of."""
    return [(k, v) for k, v in ctx.ref.items() if isinstance(v, (torch.Tensor, np.ndarray)) and not k.startswith("_")]


def _relation_problem(sentence: str, expected=None, actual=None):
    return Problem("storage", sentence, expected, actual)


def check_same_as_solution(check: dict, ctx: Context) -> Outcome:
    tol = tolerance(check.get("rtol"), check.get("atol"))
    names = list(check["names"])
    problems = []
    for n in names:
        if n not in ctx.ref:
            raise AuthoringError(f"the reference solution does not define {n}")
        if n not in ctx.learner:
            problems.append(Problem("missing", ctx.undefined(n), short_repr(ctx.ref[n]), None))
            continue
        actual, expected = ctx.learner[n], ctx.ref[n]
        scan(actual, n)
        if isinstance(expected, torch.Tensor) and isinstance(actual, torch.Tensor):
            problems.extend(
                tensor_problems(
                    actual, expected, n, ("shape", "dtype", "device", "values"), tol, sources=reference_tensors(ctx)
                )
            )
        elif isinstance(expected, torch.Tensor) and not isinstance(actual, (np.ndarray, list, tuple)):
            problems.append(
                Problem(
                    "type", f"{n} is {type_phrase(actual)}, expected a tensor", short_repr(expected), short_repr(actual)
                )
            )
        else:
            problems.extend(value_problems(actual, expected, n, tol))
    ctx.absorb(problems)
    if problems:
        return failed(problems)
    verb = "matches" if len(names) == 1 else "match"
    return Outcome(True, f"✓ {join_names(names)} {verb} the reference solution")
