"""A write into a method's result that copied (``t.flatten()[1] = 99`` on a transpose) is
named only where the method, called again on the learner's value, returns a tensor that
shares no memory with it. Real torch."""

from __future__ import annotations

import pytest
import torch

from tutor.checks.copywrites import lost_writes


def test_a_write_into_a_copy_made_by_flatten_or_reshape_is_named():
    t = torch.arange(6.0).reshape(2, 3).t()
    for code, shown in (
        ("t = a.t()\nt.flatten()[1] = 99\n", "t.flatten()"),
        ("t = a.t()\nt.reshape(-1)[1] += 1\n", "t.reshape(-1)"),
        ("t = a.t()\nt.reshape(-1).mul_(2)\n", "t.reshape(-1)"),
        ("t = a.t()\nt.contiguous()[0, 1].fill_(3)\n", "t.contiguous()"),
    ):
        (sentence,) = lost_writes(code, {"t": t})
        assert sentence.startswith(f"line 2 of your code writes into {shown}, which is a new tensor here")
        assert "so the write never reaches t" in sentence
    (sentence,) = lost_writes("t = a.t()\nt.clone()[0] = 1\n", {"t": t})
    assert "returns a view only when" not in sentence  # clone() always copies: no layout reason


@pytest.mark.parametrize(
    ("code", "t"),
    [
        ("t = a.clone()\nt.flatten()[1] = 99\n", torch.zeros(2, 3)),  # contiguous: flatten() is a view
        ("t = a.t()\nt.flatten()[1] = 99\nt = t.contiguous()\n", torch.zeros(3, 2).t()),  # rebound after the write
        ("t.flatten()[1] = 99\n", torch.zeros(3, 2).t()),  # never bound by the code: not its value at the line
        ("t = a.t()\nt.flatten(start)[1] = 99\n", torch.zeros(3, 2).t()),  # an argument that is not a constant
        ("t = a.t()\nt[1] = 99\n", torch.zeros(3, 2).t()),  # a write through t itself
        ("t = a.t(\n", torch.zeros(3, 2).t()),  # does not parse
    ],
)
def test_a_write_that_reached_the_tensor_or_cannot_be_read_again_is_not_named(code, t):
    assert lost_writes(code, {"t": t}) == []


@pytest.mark.slow
def test_a_verification_names_the_write_into_a_copy():
    from test_checks_support import check, verify

    setup = "import torch\na = torch.arange(6.0).reshape(2, 3)\n"
    solution = "t = a.t()\nt[0, 1] = 99\n"
    checks = [check(kind="tensor", expr="a")]
    r = verify("t = a.t()\nt.flatten()[1] = 99\n", solution, checks, setup=setup)
    assert not r["passed"]
    assert any("writes into t.flatten(), which is a new tensor here" in s for s in r["mistakes"]), r["mistakes"]
    assert verify(solution, solution, checks, setup=setup)["passed"]
