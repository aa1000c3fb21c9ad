"""Facts the learner's source alone establishes (sourcefacts.py), said only where the
reference's code does not share them."""

from __future__ import annotations

import textwrap

import pytest
from test_checks_support import check, verify

from tutor.checks import sourcefacts

LAYERS = """
def forward(x, layers):
    for layer in layers:
        x = layer(x)
    return x
"""


@pytest.mark.parametrize(
    ("code", "says"),
    [
        (
            "def forward(x, layers):\n    for layer in layers:\n        x = layer(x)\n        return x\n",
            "the for loop at line 2 runs its body once at most: its last statement, `return x` (line 4)",
        ),
        (
            "def forward(x, layers):\n    i = 0\n    while i < len(layers):\n        x = layers[i](x)\n"
            "        i += 1\n        break\n    return x\n",
            "the while loop at line 3 runs its body once at most: its last statement, `break` (line 6), is inside "
            "the loop, so the first pass ends it",
        ),
    ],
)
def test_a_loop_that_ends_in_an_exit_is_said_to_run_once(code, says):
    sentence = sourcefacts.once_only(code, LAYERS)
    assert sentence is not None and sentence.startswith(says), sentence


def test_an_exit_under_a_condition_or_in_the_reference_too_is_no_finding():
    early = "def first(xs):\n    for x in xs:\n        if x > 0:\n            return x\n    return None\n"
    assert sourcefacts.once_only(early, LAYERS) is None
    idiom = "def first(xs):\n    for x in xs:\n        return x\n"
    assert sourcefacts.once_only(idiom, idiom) is None
    # A pass that continues never reaches the return: the loop may run many times.
    skipping = "def first(xs):\n    for x in xs:\n        if x < 0:\n            continue\n        return x\n"
    assert sourcefacts.once_only(skipping, LAYERS) is None


STEP = """
def step(model, opt, x, y):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
"""


def test_a_new_optimizer_in_each_call_is_named_and_the_one_given_is_not():
    fresh = STEP.replace(
        "    opt.zero_grad()", "    opt = torch.optim.Adam(model.parameters(), lr=0.01)\n    opt.zero_grad()"
    )
    sentence = sourcefacts.fresh_state_each_call(fresh, STEP)
    assert sentence is not None and sentence.startswith("your step builds a new Adam each time it runs (line 3)")
    assert sourcefacts.fresh_state_each_call(STEP, STEP) is None
    # A function the reference also builds one in (a fit that makes its optimizer) is no finding.
    assert sourcefacts.fresh_state_each_call(fresh, fresh) is None
    # Plain SGD keeps nothing between steps: a new one each call steps as one kept would.
    plain = STEP.replace(
        "    opt.zero_grad()", "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n    opt.zero_grad()"
    )
    assert sourcefacts.fresh_state_each_call(plain, STEP) is None
    momentum = plain.replace("lr=0.1)", "lr=0.1, momentum=0.9)")
    assert sourcefacts.fresh_state_each_call(momentum, STEP).startswith("your step builds a new SGD each time it runs")


def test_a_function_that_never_returns_a_value_is_named_where_the_references_does():
    code = "def run(model, x, training):\n    with torch.set_grad_enabled(training):\n        out = model(x)\n"
    solution = "def run(model, x, training):\n    with torch.set_grad_enabled(training):\n        return model(x)\n"
    said = sourcefacts.returns_nothing(code, solution)
    assert said == (
        "your run (line 1) has no return statement with a value, so every call of it gives None, where the "
        "reference's run returns a value"
    )
    assert sourcefacts.returns_nothing(solution, solution) is None
    # A value returned from a nested function only is still none of the outer one's.
    nested = "def run(model, x, training):\n    def inner():\n        return model(x)\n    inner()\n"
    assert sourcefacts.returns_nothing(nested, solution) is not None
    # Where the reference's returns nothing either, it is no finding.
    assert sourcefacts.returns_nothing(code, code) is None


BEST = """
best_loss = float("inf")
best_epoch = None
for epoch in range(1, 4):
    loss = losses[epoch - 1]
    if loss < best_loss:
        best_loss = loss
        best_epoch = epoch
"""


def test_a_name_bound_once_to_a_constant_and_never_again_is_named_with_its_end_value():
    code = BEST.replace("        best_loss = loss\n", "")
    said = sourcefacts.bound_once(code, BEST, {"best_loss": float("inf")}, {"best_loss": 0.125})
    assert said == (
        "best_loss keeps the value line 2 gives it (inf): no line of your code assigns it again, where the "
        "reference's ends at 0.125"
    )
    # Bound again (a loop target, a global in a function), or ending as the reference's: no finding.
    assert sourcefacts.bound_once(BEST, BEST, {"best_loss": 0.5}, {"best_loss": 0.125}) is None
    assert sourcefacts.bound_once(code, BEST, {"best_loss": 0.125}, {"best_loss": 0.125}) is None
    with_global = code + "def f():\n    global best_loss\n    best_loss = 0\n"
    assert sourcefacts.bound_once(with_global, BEST, {"best_loss": float("inf")}, {"best_loss": 0.125}) is None
    by_text = code + "globals()['best_loss'] = 0.5\n"
    assert sourcefacts.bound_once(by_text, BEST, {"best_loss": float("inf")}, {"best_loss": 0.125}) is None


@pytest.mark.slow
def test_the_loop_that_returns_early_is_said_when_the_check_fails():
    setup = "import torch\nlayers = [lambda t: t + 1, lambda t: t * 2, lambda t: t - 3]\nx = torch.ones(3)\n"
    solution = textwrap.dedent(LAYERS) + "out = forward(x, layers)\n"
    code = "def forward(x, layers):\n    for layer in layers:\n        x = layer(x)\n        return x\nout = forward(x, layers)\n"
    r = verify(code, solution, [check(kind="tensor", expr="out")], setup=setup)
    assert not r["passed"]
    assert any("runs its body once at most" in m for m in r["mistakes"]), r["mistakes"]
