import math

import torch


class Engine:
    """A working scalar engine with + and * (results keep the caller's class)."""

    def __init__(self, data, children=()):
        self.data = data
        self.grad = 0.0
        self._prev = set(children)
        self._backward = lambda: None

    def __add__(self, other):
        out = type(self)(self.data + other.data, {self, other})

        def _backward():
            self.grad += out.grad
            other.grad += out.grad

        out._backward = _backward
        return out

    def __mul__(self, other):
        out = type(self)(self.data * other.data, {self, other})

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad

        out._backward = _backward
        return out

    def backward(self):
        order, seen = [], set()

        def visit(v):
            if v not in seen:
                seen.add(v)
                for child in v._prev:
                    visit(child)
                order.append(v)

        visit(self)
        _REACHED.append({id(v) for v in order})  # the checks' record: which nodes each backward() reached
        del _REACHED[:-64]
        leaves = [v for v in order if not v._prev]
        before = [v.grad for v in leaves]
        self.grad = 1.0
        for v in reversed(order):
            v._backward()
        # the checks' record: the value backward() ran from, and each leaf's value and the
        # gradient this backward() added to it
        _RUNS.append((self.data, {id(v): (v.data, v.grad - g) for v, g in zip(leaves, before)}))
        del _RUNS[:-64]


_REACHED = []
_RUNS = []


def _local_grad(Value, build, x):
    a = Value(x)
    build(a).backward()
    return a.grad


def _pow_keeps_n(Value):
    # d(a**3)/da at 2 is 12; n * a**n gives 24
    return _local_grad(Value, lambda a: a**3, 2.0) == 24.0


def _tanh_from_input(Value):
    # 1 - tanh(x)**2 is right; 1 - x**2 uses the input instead of the output
    return math.isclose(_local_grad(Value, lambda a: a.tanh(), 0.5), 0.75)


# gradient descent with the engine against torch.optim.SGD on the same data
_XS = torch.randn(6, dtype=torch.float64).tolist()
_YS = torch.randn(6, dtype=torch.float64).tolist()
_W0, _B0 = torch.randn(2, dtype=torch.float64).tolist()
_LR, _STEPS = 0.2, 6


def fit_result(fit):
    """w and b after your fit, then the losses it returned."""
    w, b = Engine(_W0), Engine(_B0)
    losses = fit(_XS, _YS, w, b, _LR, _STEPS)
    return torch.tensor([w.data, b.data, *losses], dtype=torch.float64)


def _fit_end(fit):
    """w.data, b.data, w.grad and b.grad when your fit returns."""
    w, b = Engine(_W0), Engine(_B0)
    fit(_XS, _YS, w, b, _LR, _STEPS)
    return (w.data, b.data, w.grad, b.grad)


def backprops_through_w_and_b(fit):
    """Whether, in your fit, backward() ran through a graph that holds w and b at least once a step."""
    w, b = Engine(_W0), Engine(_B0)
    _REACHED.clear()
    fit(_XS, _YS, w, b, _LR, _STEPS)
    return sum(1 for reached in _REACHED if id(w) in reached and id(b) in reached) >= _STEPS


def _descent_from_backward(fit):
    """For the checks: whether every loss your fit returns is the value of an Engine that
    backward() ran from, through w and b, and every step moves w.data and b.data by -lr
    times the gradients that backward() gave them: 'every step', or the first step that
    does not."""
    w, b = Engine(_W0), Engine(_B0)
    _RUNS.clear()
    losses = list(fit(_XS, _YS, w, b, _LR, _STEPS))
    runs = [(root, leaves[id(w)], leaves[id(b)]) for root, leaves in _RUNS if id(w) in leaves and id(b) in leaves]
    steps, k = [], 0
    for i, loss in enumerate(losses):
        if not isinstance(loss, (int, float)):
            return f"step {i + 1}'s loss is a {type(loss).__name__}, not a number"
        while k < len(runs) and not math.isclose(runs[k][0], loss, rel_tol=1e-12, abs_tol=1e-15):
            k += 1
        if k == len(runs):
            return f"step {i + 1}'s loss, {loss:.6g}, is the value of no Engine that backward() ran from through w and b"
        steps.append(runs[k])
        k += 1
    ends = [(r[1][0], r[2][0]) for r in steps[1:]] + [(w.data, b.data)]
    for i, ((_, (w0, gw), (b0, gb)), (w1, b1)) in enumerate(zip(steps, ends)):
        for name, start, grad, end in (("w", w0, gw, w1), ("b", b0, gb, b1)):
            if not math.isclose(end - start, -_LR * grad, rel_tol=1e-9, abs_tol=1e-12):
                return (f"step {i + 1} moves {name}.data by {end - start:.6g}, where -lr times the gradient "
                        f"that step's backward() gave {name} is {-_LR * grad + 0.0:.6g}")
    return "every step"


def _never_moves(fit):
    w, b, _, _ = _fit_end(fit)
    return w == _W0 and b == _B0


def _local_grad_times(Value, op, x, k=5.0):
    """d(op(a) * k)/da at a = x: a node whose _backward leaves out out.grad gives d op/da alone."""
    a = Value(x)
    (op(a) * Value(k)).backward()
    return a.grad


def _ignores_out_grad(Value):
    """The operations whose _backward does not multiply by out.grad."""
    ops = {"**": (lambda a: a**3, 2.0, 12.0), "tanh": (lambda a: a.tanh(), 0.5, 1 - math.tanh(0.5) ** 2),
           "relu": (lambda a: a.relu(), 2.0, 1.0)}
    found = []
    for name, (op, x, local) in ops.items():
        try:
            g = _local_grad_times(Value, op, x)
        except Exception:
            continue
        if math.isclose(g, local) and not math.isclose(g, 5.0 * local):
            found.append(name)
    return found


def grads_through(Value):
    """For the checks: x.grad in op(x * 3) for x = 0.25, op each of ** 2, ** 3, tanh and relu.
    x is reached only through op: an op whose node does not list its operand gets x none,
    whatever order a walk over sets takes."""
    ops = [lambda a: a**2, lambda a: a**3, lambda a: a.tanh(), lambda a: a.relu()]
    out = []
    for op in ops:
        x = Value(0.25)
        op(x * Value(3.0)).backward()
        out.append(float(x.grad))
    return torch.tensor(out, dtype=torch.float64)


# Exponents beside the 2 and 3 of the random graphs: a ** that knows only those gets
# these wrong (0 and 1 at the power rule's edges, negative ones below them).
_POWERS = (0, 1, 4, 5, -1, -2)


def grads_through_powers(Value):
    """For the checks: x.grad in (x * 3) ** n for x = 0.5, n each of _POWERS."""
    out = []
    for n in _POWERS:
        x = Value(0.5)
        ((x * Value(3.0)) ** n).backward()
        out.append(float(x.grad))
    return torch.tensor(out, dtype=torch.float64)


def _stops_the_walk(Value):
    """The operations after which backward() never runs the operand's own _backward: in
    op(x * 3), the product gets its gradient from op, but x gets none."""
    ops = {"**": lambda a: a**2, "tanh": lambda a: a.tanh(), "relu": lambda a: a.relu()}
    found = []
    for name, op in ops.items():
        try:
            x = Value(0.25)
            product = x * Value(3.0)
            op(product).backward()
        except Exception:
            continue
        if product.grad != 0 and x.grad == 0:
            found.append(name)
    return found


def _chains_own_grad(Value):
    """The operations whose _backward multiplies the local derivative by self.grad (the
    operand's own gradient so far) where out.grad belongs: given a.grad = 2 before the
    backward of op(a) * 5, a ends with 2 + 2 * local, where 2 + 5 * local is right."""
    ops = {"**": (lambda a: a**3, 2.0, 12.0), "tanh": (lambda a: a.tanh(), 0.5, 1 - math.tanh(0.5) ** 2),
           "relu": (lambda a: a.relu(), 2.0, 1.0)}
    found = []
    for name, (op, x, local) in ops.items():
        try:
            a = Value(x)
            out = op(a) * Value(5.0)
            a.grad = 2.0
            out.backward()
        except Exception:
            continue
        if math.isclose(a.grad, 2.0 + 2.0 * local) and not math.isclose(a.grad, 2.0 + 5.0 * local):
            found.append(name)
    return found


def _assigns_own_grad(Value):
    """The operations whose _backward assigns self.grad = ... instead of adding into it: in
    op(a) + a, the add's share (1) reaches a first, and an assignment then overwrites it."""
    ops = {"**": (lambda a: a**2, 2.0, 4.0), "tanh": (lambda a: a.tanh(), 0.5, 1 - math.tanh(0.5) ** 2),
           "relu": (lambda a: a.relu(), 2.0, 1.0)}
    found = []
    for name, (op, x, local) in ops.items():
        try:
            a = Value(x)
            (op(a) + a).backward()
        except Exception:
            continue
        if math.isclose(a.grad, local) and not math.isclose(a.grad, local + 1.0):
            found.append(name)
    return found


def _relu_unmasked(Value):
    """relu passes a gradient back where its input is negative."""
    try:
        return _local_grad(Value, lambda a: a.relu(), -1.5) != 0.0
    except Exception:
        return False


def _returns_engine(Value):
    """The operations whose result is a plain Engine, without the subclass's methods."""
    found = []
    for name, op in (("**", lambda a: a**2), ("tanh", lambda a: a.tanh()), ("relu", lambda a: a.relu())):
        try:
            if type(op(Value(0.5))) is Engine:
                found.append(name)
        except Exception:
            pass
    return found
