"""Lesson preludes run in the learner's kernel, which the app's live pane keeps for the whole
session: a helper the checks need must not change what torch does for the learner's own
code afterwards. Real torch."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

LESSONS = Path(__file__).resolve().parent.parent / "lessons"


@pytest.fixture
def autograd_prelude():
    original = torch.autograd.backward
    code = compile((LESSONS / "shared" / "prelude_autograd.py").read_text(), "<setup>", "exec")
    first: dict = {}
    exec(code, first)
    second: dict = {}
    exec(code, second)  # the live pane runs a lesson's setup again for each exercise
    yield second
    torch.autograd.backward = original


def test_the_autograd_prelude_leaves_in_place_detection_on(autograd_prelude):
    # A saved-tensors hook (an earlier version of this helper) turns autograd's check of
    # in-place changes off for every graph made after it: in-place/saved-tensor's lesson
    # would then no longer raise in the same kernel.
    x, w = torch.ones(2, 2), torch.ones(2, 2, requires_grad=True)
    h = torch.sigmoid(x @ w)
    h *= 2
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        h.sum().backward()


def test_the_autograd_prelude_tells_a_backward_from_a_gradient_set_by_hand(autograd_prelude):
    ran = autograd_prelude["_backward_ran"]
    assert torch.autograd.backward.__wrapped__.__module__ == "torch.autograd"  # wrapped once, not twice
    for how in ("plain", "retained", "of a sum", "by hand", "autograd.grad then by hand"):
        a = torch.tensor(2.0, requires_grad=True)
        b = torch.tensor(3.0, requires_grad=True)
        c = a * b + b**2
        if how == "plain":
            c.backward()
        elif how == "retained":
            c.backward(retain_graph=True)
        elif how == "of a sum":
            (c * 1).sum().backward(retain_graph=True)
        elif how == "by hand":
            a.grad, b.grad = b.detach().clone(), (a + 2 * b).detach()
        else:  # autograd.grad() frees the saved tensors as backward() does, but fills no .grad
            a.grad, b.grad = torch.autograd.grad(c, [a, b])
        assert ran(c) is how.startswith(("plain", "retained", "of a sum")), how


def test_the_autograd_prelude_tells_which_leaves_a_backward_filled(autograd_prelude):
    # A backward() told to fill a only, or a .grad written over after a real backward(),
    # leaves a gradient no backward() computed.
    filled = autograd_prelude["_grad_from_backward"]
    for how in ("plain", "accumulated", "inputs a only", "b set after", "b scaled after", "grad"):
        a = torch.tensor(2.0, requires_grad=True)
        b = torch.tensor(3.0, requires_grad=True)
        c = a * b + b**2
        if how == "accumulated":
            a.grad, b.grad = torch.zeros(()), torch.zeros(())
        if how == "inputs a only":
            c.backward(inputs=[a])
            b.grad = (a + 2 * b).detach()
        elif how == "grad":
            a.grad, b.grad = torch.autograd.grad(c, [a, b])
        else:
            c.backward()
        if how == "b set after":
            b.grad = torch.tensor(8.0)
        elif how == "b scaled after":
            b.grad *= 1
        expected_b = how in ("plain", "accumulated")
        assert filled(a) is (how != "grad"), how
        assert filled(b) is expected_b, how
    assert not filled(torch.tensor(1.0, requires_grad=True))  # no backward() reached it
