import math

import torch
from hypothesis import given
from hypothesis import strategies as st
from micrograd.engine import Value


def test_sanity_check():
    x = Value(-4.0)
    z = 2 * x + 2 + x
    q = z.relu() + z * x
    h = (z * z).relu()
    y = h + q + q * x
    y.backward()
    xmg, ymg = x, y

    x = torch.Tensor([-4.0]).double()
    x.requires_grad = True
    z = 2 * x + 2 + x
    q = z.relu() + z * x
    h = (z * z).relu()
    y = h + q + q * x
    y.backward()
    xpt, ypt = x, y

    # forward pass went well
    assert ymg.data == ypt.data.item()
    # backward pass went well
    assert xmg.grad == xpt.grad.item()


def test_more_ops():
    a = Value(-4.0)
    b = Value(2.0)
    c = a + b
    d = a * b + b**3
    c = c + c + 1
    c = c + 1 + c + (-a)
    d = d + d * 2 + (b + a).relu()
    d = d + 3 * d + (b - a).relu()
    e = c - d
    f = e**2
    g = f * 0.5
    g = g + 10.0 * f**-1
    g.backward()
    amg, bmg, gmg = a, b, g

    a = torch.Tensor([-4.0]).double()
    b = torch.Tensor([2.0]).double()
    a.requires_grad = True
    b.requires_grad = True
    c = a + b
    d = a * b + b**3
    c = c + c + 1
    c = c + 1 + c + (-a)
    d = d + d * 2 + (b + a).relu()
    d = d + 3 * d + (b - a).relu()
    e = c - d
    f = e**2
    g = f * 0.5
    g = g + 10.0 * f**-1
    g.backward()
    apt, bpt, gpt = a, b, g

    tol = 1e-6
    # forward pass went well
    assert abs(gmg.data - gpt.data.item()) < tol
    # backward pass went well
    assert abs(amg.grad - apt.grad.item()) < tol
    assert abs(bmg.grad - bpt.grad.item()) < tol


def test_relu():
    x = Value(-3.0)
    y = x.relu()
    y.backward()
    assert y.data == 0
    assert x.grad == 0


small = st.floats(min_value=-100, max_value=100, allow_nan=False, allow_infinity=False)


@given(small, small)
def test_product_rule(a, b):
    x, y = Value(a), Value(b)
    z = x * y + x
    z.backward()
    assert math.isclose(x.grad, b + 1, rel_tol=1e-9, abs_tol=1e-9)
    assert math.isclose(y.grad, a, rel_tol=1e-9, abs_tol=1e-9)


@given(small)
def test_a_node_used_twice_adds_both_gradients(a):
    x = Value(a)
    y = x * x
    y.backward()
    assert math.isclose(x.grad, 2 * a, rel_tol=1e-9, abs_tol=1e-9)
