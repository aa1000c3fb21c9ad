"""``_graph(t)`` in a check's expression or a mistake's ``when``: the class names of the
autograd nodes ``t`` was computed through, read where ``t`` was made.

A tensor crosses from the learner's kernel as data: the judge's copy has the values and
whether it is a leaf, not the graph that made it, so ``w.grad_fn`` there cannot tell a
``w`` scaled after ``requires_grad`` (the loss went through it) from a ``w`` rebound to
``w.clone()`` after the loss (it did not). The judge's path with both roles in this process
(run_local); real torch."""

from __future__ import annotations

from test_authoring_errors import validate_broken
from test_checks_support import check, mistake, verify

SETUP = "import torch\nx = torch.arange(12.0).reshape(4, 3)\n"
SOLUTION = "w = (torch.randn(3, 2) * 0.01).requires_grad_()\nloss = (x @ w).sum()\nloss.backward()\n"
CHECKS = [check(kind="tensor", expr="w", compare=["values", "is_leaf"], rtol=1e-5)]
SCALED = "the loss went through w: scale first"
REBOUND = "w was rebound after the loss"
MISTAKES = [
    mistake(when="not w.is_leaf and _graph(w) <= _graph(loss)", message=SCALED),
    mistake(when="not w.is_leaf and not _graph(w) <= _graph(loss)", message=REBOUND),
]


def said(code: str) -> list:
    result = verify(code, SOLUTION, CHECKS, setup=SETUP, mistakes=MISTAKES)
    assert not result["passed"], result
    return result["mistakes"]


def test_a_leaf_scaled_after_requires_grad_is_told_apart_from_one_rebound_after_the_loss():
    assert said("w = torch.randn(3, 2, requires_grad=True) * 0.01\nloss = (x @ w).sum()\nloss.backward()\n") == [SCALED]
    assert said(SOLUTION + "w = w.clone()\n") == [REBOUND]


def test_the_learner_s_code_cannot_shadow_the_helper():
    # A _graph of the code's own that says every graph is empty would make "rebound" true.
    code = SOLUTION + "w = w.clone()\n_graph = lambda t: frozenset()\n"
    assert REBOUND in said(code)
    code = "w = torch.randn(3, 2, requires_grad=True) * 0.01\nloss = (x @ w).sum()\nloss.backward()\n"
    assert said(code + "def _graph(t):\n    return frozenset({'x'})\n") == [SCALED]


def test_a_value_that_is_no_tensor_has_no_graph():
    result = verify(
        "w = 3\nloss = 1.0\n",
        SOLUTION,
        CHECKS,
        setup=SETUP,
        mistakes=[mistake(when="_graph(w) == frozenset() and _graph(loss) == frozenset()", message="no graphs")],
    )
    assert result["mistakes"] == ["no graphs"], result


def test_pack_validate_knows_the_helper(tmp_path):
    # An unknown name next to it is reported; _graph is not.
    out, at = validate_broken(tmp_path, "_graph(t) <= _graph(t + offset)", "offset")
    assert f"{at}offset is defined neither" in out, out
    assert "_graph is defined neither" not in out, out
