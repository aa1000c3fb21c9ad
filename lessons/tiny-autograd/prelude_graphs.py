import math

import torch

# Random expression graphs drawn from torch's generator: each new node combines two earlier
# nodes, and a third of the time the same node twice, so nodes are used more than once.
_N_GRAPHS, _N_LEAVES, _N_OPS = 8, 3, 7


def _graph(leaf, values, picks, ops):
    nodes = [leaf(v) for v in values]
    for op, i, j in picks:
        a = nodes[i % len(nodes)]
        b = a if j % 3 == 0 else nodes[j % len(nodes)]
        name = ops[op % len(ops)]
        if name == "+":
            nodes.append(a + b)
        elif name == "*":
            nodes.append(a * b)
        elif name == "**":
            nodes.append(a ** (2 + j % 2))
        elif name == "tanh":
            nodes.append(a.tanh())
        else:
            nodes.append(a.relu())
    root = nodes[-1]
    for node in nodes[len(values) : -1]:  # every node reaches the output, most by several paths
        root = root + node
    return nodes[: len(values)], root


def _torch_leaf(v):
    return torch.tensor(v, dtype=torch.float64, requires_grad=True)


def _draw(ops):
    """Leaf values and operation picks of _N_GRAPHS graphs, as tensors (one row per graph)."""
    values, picks = [], []
    while len(values) < _N_GRAPHS:
        v = torch.randn(_N_LEAVES, dtype=torch.float64)
        p = torch.randint(0, 1000, (_N_OPS, 3))
        _, root = _graph(_torch_leaf, v.tolist(), p.tolist(), ops)
        if abs(root.item()) < 1e4:  # keep the numbers tame
            values.append(v)
            picks.append(p)
    return torch.stack(values), torch.stack(picks)


_OPS = {"+*": "+*", "all": ["+", "*", "**", "tanh", "relu"]}
_VALUES_PLUS_TIMES, _PICKS_PLUS_TIMES = _draw(_OPS["+*"])
_VALUES_ALL, _PICKS_ALL = _draw(_OPS["all"])
_GRAPHS = {"+*": (_VALUES_PLUS_TIMES, _PICKS_PLUS_TIMES), "all": (_VALUES_ALL, _PICKS_ALL)}


def _grads_of(make, kind):
    rows = []
    values, picks = _GRAPHS[kind]
    for v, p in zip(values.tolist(), picks.tolist()):
        leaves, root = _graph(make, v, p, _OPS[kind])
        root.backward()
        rows.append([0.0 if leaf.grad is None else float(leaf.grad) for leaf in leaves])
    return torch.tensor(rows, dtype=torch.float64)


def grads_with(Value, kind):
    """The gradients your Value computes for the graphs."""
    return _grads_of(Value, kind)


def _grads_at(Value, build):
    a, b = Value(2.0), Value(3.0)
    build(a, b).backward()
    return (a.grad, b.grad)


def _diamond(a, b):
    # c reaches the output through p and through q: d = a*a*b + a*b*b
    c = a * b
    p = c * a
    q = c * b
    return p + q


# What each classic bug makes of a + a (true a.grad: 2) and the diamond (true: 21, 16).
def _assigns_grad(Value):
    return _grads_at(Value, _diamond) in ((9.0, 6.0), (6.0, 4.0))


def _loses_repeated_child(Value):
    return _grads_at(Value, lambda a, b: a + a) == (1.0, 0.0) and _grads_at(Value, _diamond) == (21.0, 16.0)


def _mul_sends_own_value(Value):
    # d(a*b)/da is b: an operand given its own value as its gradient gets a.grad = a
    return _grads_at(Value, lambda a, b: a * b) == (2.0, 3.0)


def _not_topological(Value):
    return _grads_at(Value, _diamond) in ((12.0, 10.0), (15.0, 12.0))


def _visits_twice(Value):
    return _grads_at(Value, _diamond) in ((27.0, 20.0), (30.0, 22.0))


def _diamond_grads_after_backward(Value):
    """(the output's .grad, a.grad, b.grad) after the diamond's backward(), as floats."""
    try:
        a, b = Value(2.0), Value(3.0)
        out = _diamond(a, b)
        out.backward()
        return (float(out.grad), float(a.grad), float(b.grad))
    except Exception:  # it raised, or a .grad is not a number
        return None


def inner_grads(Value):
    """The .grad of c, p, q and out after out.backward(), for a = 2, b = 3, c = a * b,
    p = c * a, q = c * b, out = p + q: every node out was computed from, not only the leaves."""
    try:
        a, b = Value(2.0), Value(3.0)
        c = a * b
        p, q = c * a, c * b
        out = p + q
        out.backward()
        return [float(node.grad) for node in (c, p, q, out)]
    except Exception:  # it raised, or a .grad is not a number
        return None


def _backward_runs(Value):
    """[(node's name, the output's .grad then)] in the order backward() ran the diamond's
    _backward functions (each wrapped to record it), or None if it raised."""
    try:
        a, b = Value(2.0), Value(3.0)
        c = a * b
        p, q = c * a, c * b
        out = p + q
        runs = []
        for label, node in (("a", a), ("b", b), ("c", c), ("p", p), ("q", q), ("out", out)):
            def wrapped(run=node._backward, label=label):
                runs.append((label, float(out.grad)))
                return run()
            node._backward = wrapped
        out.backward()
        return runs
    except Exception:
        return None


def _children_first(Value):
    """Every node's _backward ran, the output's after the others: children before parents."""
    runs = _backward_runs(Value)
    names = [label for label, _ in runs or []]
    return sorted(names) == ["a", "b", "c", "out", "p", "q"] and names.index("out") > names.index("c")


def _seeded_after(Value):
    """Every node's _backward ran, parents first, while the output's .grad was still 0."""
    runs = _backward_runs(Value)
    names = [label for label, _ in runs or []]
    ordered = sorted(names) == ["a", "b", "c", "out", "p", "q"] and names.index("out") < names.index("c")
    return ordered and all(seed == 0.0 for _, seed in runs) and _diamond_grads_after_backward(Value) == (1.0, 0.0, 0.0)


def _output_not_seeded(Value):
    """backward() leaves the output's own .grad and every leaf's at 0."""
    return _diamond_grads_after_backward(Value) == (0.0, 0.0, 0.0)


# One operation alone, a = 0.5 and b = 3.0 (and n = 3 for **), output seeded with 1: the
# local gradients each operand should get. An engine whose walk or seeding is broken gets
# every one of them wrong; one whose op is wrong gets that op's alone.
_LOCAL = {
    "+": (lambda a, b: a + b, (1.0, 1.0)),
    "*": (lambda a, b: a * b, (3.0, 0.5)),
    "**": (lambda a, b: a**3, (0.75, 0.0)),
    "tanh": (lambda a, b: a.tanh(), (1 - math.tanh(0.5) ** 2, 0.0)),
    "relu": (lambda a, b: a.relu(), (1.0, 0.0)),
}


def _wrong_locals(Value):
    """The operations, among those Value has, whose local gradients differ when used alone."""
    wrong = []
    for name, (build, want) in _LOCAL.items():
        method = {"+": "__add__", "*": "__mul__", "**": "__pow__"}.get(name, name)
        if not callable(getattr(Value, method, None)):
            continue
        try:
            a, b = Value(0.5), Value(3.0)
            build(a, b).backward()
            got = (float(a.grad), float(b.grad))
        except Exception:
            wrong.append(name)
            continue
        if not all(math.isclose(g, w, rel_tol=1e-9, abs_tol=1e-12) for g, w in zip(got, want)):
            wrong.append(name)
    return wrong
