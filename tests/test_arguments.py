"""A torch call both sources make once, set otherwise (tutor/checks/arguments.py): read from
the sources, bound to torch's own signatures, said only for literal settings; the
reference's value is named only where it is the signature's (public) default."""

from __future__ import annotations

import pytest
from test_checks_support import check, verify

from tutor.checks import arguments


def _said(code: str, solution: str) -> list[str]:
    return [sentence for sentence, _, _ in arguments.other_settings(code, solution)]


OPTIMIZER = "import torch\n\ndef make(params):\n    return torch.optim.SGD(params, {settings})\n"
LOSS = "import torch.nn.functional as F\n\ndef loss(out, y):\n    return F.mse_loss(out, y{settings})\n"


def test_a_setting_left_at_its_default_is_named_and_the_references_value_is_not():
    said = _said(OPTIMIZER.format(settings="lr=0.1"), OPTIMIZER.format(settings="lr=0.1, momentum=0.9"))
    assert said == [
        "line 4 of your code, `torch.optim.SGD(params, lr=0.1)`, leaves momentum at its default, 0, "
        "where the reference's passes another momentum"
    ]
    assert "0.9" not in said[0]  # a hyperparameter may be the answer the exercise asks for


def test_a_setting_passed_where_the_reference_keeps_the_default_names_both():
    said = _said(LOSS.format(settings=", reduction='sum'"), LOSS.format(settings=""))
    assert said == [
        "line 4 of your code, `F.mse_loss(out, y, reduction='sum')`, passes reduction='sum', "
        "where the reference's leaves it at its default, 'mean'"
    ]


def test_positional_settings_are_bound_to_their_names():
    code = "import torch\nlayer = torch.nn.Linear(3, 4)\n"
    said = _said(code, "import torch\nlayer = torch.nn.Linear(4, 4)\n")
    assert said == [
        "line 2 of your code, `torch.nn.Linear(3, 4)`, passes in_features=3, where the reference's passes another in_features"
    ]


@pytest.mark.parametrize(
    "code, solution",
    [
        # the same settings, written otherwise (a default passed, a positional lr, 1e-1)
        (OPTIMIZER.format(settings="1e-1, momentum=0"), OPTIMIZER.format(settings="lr=0.1")),
        # a default of None is "off": shuffle=False is the same loader
        (
            "from torch.utils.data import DataLoader\nl = DataLoader(ds, batch_size=4)\n",
            "from torch.utils.data import DataLoader\nl = DataLoader(ds, batch_size=4, shuffle=False)\n",
        ),
        # how, not what: foreach
        (OPTIMIZER.format(settings="lr=0.1, foreach=False"), OPTIMIZER.format(settings="lr=0.1")),
        # a setting given by a name is not read
        ("import torch\nLR = 0.5\nopt = torch.optim.SGD(ps, lr=LR)\n", OPTIMIZER.format(settings="lr=0.1")),
        # two calls in one source: which is which is not known
        (
            OPTIMIZER.format(settings="lr=0.2") + "other = torch.optim.SGD(ps, lr=0.3)\n",
            OPTIMIZER.format(settings="lr=0.1"),
        ),
        # the learner's own F is not torch's
        (
            "def F(x):\n    return x\nclass G:\n    pass\ny = F.mse_loss(1, 2, reduction='sum')\n",
            LOSS.format(settings=""),
        ),
        # not a torch call at all
        ("import numpy as np\nx = np.sum(a, axis=0)\n", "import numpy as np\nx = np.sum(a, axis=1)\n"),
    ],
    ids=["same-settings", "none-is-off", "how-not-what", "a-name", "two-calls", "own-F", "not-torch"],
)
def test_no_setting_is_said_where_none_differs_or_it_is_not_read(code, solution):
    assert _said(code, solution) == []


def test_the_judge_says_it_when_a_training_check_fails():
    setup = "import torch\ntorch.manual_seed(0)\nw = torch.nn.Parameter(torch.ones(3))\n"
    body = "opt = torch.optim.SGD([w], {settings})\nfor _ in range(3):\n    opt.zero_grad()\n    (w ** 2).sum().backward()\n    opt.step()\n"
    code, solution = body.format(settings="lr=0.1"), body.format(settings="lr=0.1, momentum=0.9")
    r = verify(code, solution, [check(kind="tensor", expr="w")], setup=setup)
    assert not r["passed"]
    assert any("leaves momentum at its default, 0" in m for m in r["mistakes"]), r["mistakes"]
