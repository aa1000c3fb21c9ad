"""An in-place update the reference writes and no line of the learner's code can have made
(tutor/checks/updates.py), read from the two sources: said where nothing in the learner's
code could reach the same tensor, never where something could."""

from __future__ import annotations

import pytest
import torch

from tutor.checks.updates import never_updated

ZERO = "scores_np = scores.numpy().copy()\nscores.zero_()\n"
INIT = (
    "import math\nfrom torch import nn\n\ndef default_init_(layer):\n    bound = 1 / math.sqrt(layer.weight.shape[1])\n"
    "    nn.init.uniform_(layer.weight, -bound, bound)\n    nn.init.uniform_(layer.bias, -bound, bound)\n"
)
PORT = "layer = nn.Linear(3, 3)\nwith torch.no_grad():\n    layer.weight.copy_(W.T)\n    layer.bias.copy_(b)\n"


def said(code: str, solution: str, failing, names=("scores", "W", "b", "torch", "nn"), values=None) -> list:
    return never_updated(code, solution, failing, values if values is not None else dict.fromkeys(names))


def test_a_dropped_in_place_update_of_a_setup_tensor_is_named():
    assert said("scores_np = scores.numpy().copy()\n", ZERO, ["scores"]) == [
        "the reference changes scores in place with scores.zero_(); no line of your code changes scores (no "
        "in-place call on it, no assignment to it or into it), so it keeps the values it was made with"
    ]


def test_a_dropped_update_inside_the_reference_s_function_names_the_function():
    code = INIT.replace("    nn.init.uniform_(layer.weight, -bound, bound)\n", "")
    assert said(code, INIT, ["_probe(default_init_, 20, 7)"]) == [
        "the reference's default_init_() changes layer.weight in place with nn.init.uniform_(layer.weight, -bound, "
        "bound); no line of your code changes layer.weight (no in-place call on it, no assignment to it or into "
        "it), so it keeps the values it was made with"
    ]


def test_a_discarded_out_of_place_result_is_named():
    solution = "x.add_(1)\n"
    assert said("x.add(1)\n", solution, ["x"], ("x",)) == [
        "your code calls x.add(1) and drops what it returns: add() is out of place (it makes a new tensor and "
        "leaves x as it was), where the reference's x.add_(1) changes x itself"
    ]


@pytest.mark.parametrize(
    "code",
    [
        "w = layer.weight\nw.uniform_(-1, 1)\n",  # through an alias
        "for p in layer.parameters():\n    p.zero_()\n",
        "for p in layer.parameters():\n    p.data = p.data * 0\n",
        "layer.weight[:] = 0\n",
        "layer.weight = nn.Parameter(layer.weight * 2)\n",
        "layer.load_state_dict(state)\n",
        "helper(layer)\n",  # a setup's helper handed the layer
        "opt = torch.optim.SGD(layer.parameters(), lr=0.1)\nopt.step()\n",
        "from torch.nn.init import uniform_\nuniform_(layer.weight, -1, 1)\n",
        "torch.Tensor.uniform_(layer.weight, -1, 1)\n",
        "layer.apply(init)\n",
        "torch.nn.utils.vector_to_parameters(vec, layer.parameters())\n",
        "setattr(layer, 'weight', nn.Parameter(W.T.clone()))\n",
        "port = lambda l: l.weight.uniform_(-1, 1)\nport(layer)\n",  # through a lambda's argument
        "layer.weight.mul_(0).add_(1)\n",  # a chain of in-place calls
    ],
)
def test_a_write_that_may_reach_the_tensor_another_way_is_not_called_missing(code):
    solution = "layer.weight.uniform_(-1, 1)\n"
    assert said(code, solution, ["layer.weight"], ("layer", "state", "helper", "init")) == []


@pytest.mark.parametrize(
    "code",
    [
        "scores *= 0\n",
        "scores[:] = 0\n",
        "scores = torch.zeros_like(scores)\n",
        "s = scores\ns.zero_()\n",
        "s = scores.view(-1)\ns.zero_()\n",
        "torch.Tensor.zero_(scores)\n",
        "torch.relu_(scores)\n",
        "F.relu_(scores)\n",
    ],
)
def test_a_setup_tensor_changed_another_way_is_not_called_unchanged(code):
    assert said(code, ZERO, ["scores"]) == []


def test_a_change_no_failing_check_reads_is_not_named():
    assert said("layer = nn.Linear(3, 3)\nwith torch.no_grad():\n    layer.bias.copy_(b)\n", PORT, ["layer.bias"]) == []


def test_a_buffer_registered_in_init_is_how_it_is_made_not_a_change():
    solution = (
        "class S(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.register_buffer('std', torch.ones(3))\n    def fit(self, x):\n        self.std.copy_(x.std(0))\n"
        "        return self\nnorm = S().fit(X)\n"
    )
    code = solution.replace("        self.std.copy_(x.std(0))\n", "")
    assert said(code, solution, ["norm.std"], ("X", "torch", "nn"))[0].startswith(
        "the reference's fit() changes self.std in place with self.std.copy_(x.std(0)); no line of your code"
    )
    # registered again in fit: made anew there, so not "kept"
    again = solution.replace("self.std.copy_(x.std(0))", "self.register_buffer('std', x.std(0))")
    assert said(again, solution, ["norm.std"], ("X", "torch", "nn")) == []


def test_an_optimizer_step_inside_a_function_named_step_still_counts_as_a_write():
    code = (
        "def step(layer, opt):\n    opt.step()\n\nopt = torch.optim.SGD(layer.parameters(), lr=0.1)\nstep(layer, opt)\n"
    )
    assert said(code, "layer.weight.uniform_(-1, 1)\n", ["layer.weight"], ("layer",)) == []


def test_a_tensor_bound_to_another_name_that_is_changed_is_not_called_unchanged():
    code = "s2 = torch.ones(2, 3)\nscores = s2\ns2.zero_()\n"
    assert said(code, "scores = torch.ones(2, 3)\nscores.zero_()\n", ["scores"]) == []
    # made by the code itself, and never changed after
    assert said("layer = nn.Linear(3, 2)\n", PORT, ["layer.weight"])[0].startswith(
        "the reference changes layer.weight in place with layer.weight.copy_(W.T); no line of your code changes"
    )


def test_a_statement_in_place_where_the_reference_s_is_not_and_back_is_named():
    w = torch.ones(2)
    assert said("w = w - 0.1 * w.grad\n", "w -= 0.1 * w.grad\n", ["w"], values={"w": w}) == [
        "your code's w = w - 0.1 * w.grad makes a new tensor and binds w to it; the reference's w -= 0.1 * w.grad "
        "changes w itself in place, so every other holder of that tensor (the caller, an optimizer, the checks) "
        "sees the change"
    ]
    solution = "def step(p, lr):\n    p = p * (1 - lr)\n    return p\n"
    assert said("def step(p, lr):\n    p *= 1 - lr\n    return p\n", solution, ["step(w, 0.1)"], ("w",)) == [
        "your code's p *= 1 - lr changes p in place where p is a tensor, and p is what the caller passed to step(), "
        "so the caller's tensor changes too; the reference's p = p * (1 - lr) makes a new tensor and leaves the "
        "argument as it was"
    ]
    assert said("t = a.t_()\n", "t = a.t()\n", ["a"], values={"a": torch.ones(2, 2)}) == [
        "your code calls a.t_(), which changes a itself in place; the reference's a.t(...) returns a new tensor (or "
        "a view) and leaves a as it was"
    ]


def test_an_in_place_statement_on_the_function_s_own_copy_is_not_blamed():
    solution = "def step(p, lr):\n    p = p * (1 - lr)\n    return p\n"
    code = "def step(p, lr):\n    p = p.clone()\n    p *= 1 - lr\n    return p\n"
    assert said(code, solution, ["step(w, 0.1)"], ("w",)) == []


def test_a_number_added_to_another_way_is_not_called_a_tensor():
    assert said("total = total + 1.5\n", "total += 1.5\n", ["total"], values={"total": 3.0}) == []
    # a function's local: the source does not say what it holds, and the sentence says so
    text = said("def f(t):\n    t = t + 1\n    return t\n", "def f(t):\n    t += 1\n    return t\n", ["f(x)"])
    assert text and "(where t holds a tensor)" in text[0]


def test_a_set_s_method_and_a_flag_are_not_read_as_tensor_updates():
    solution = "seen = set()\nseen.add(3)\n"
    assert said("seen = set()\nseen.add_(3)\n", solution, ["seen"], ("seen",)) == []
    # requires_grad_ changes no values: "keeps the values it was made with" would be beside the point
    solution = "model.body.requires_grad_(False)\n"
    assert said("pass\n", solution, ["model.body"], ("model",)) == []


def test_an_in_place_method_on_a_local_says_where_it_holds_a_tensor():
    text = said("def f(x):\n    return x.abs_().max()\n", "def f(x):\n    return x.abs().max()\n", ["f(t)"])
    assert text == [
        "your code calls x.abs_(), which changes x itself in place where x is a tensor; the reference's "
        "x.abs(...) returns a new tensor (or a view) and leaves x as it was"
    ]
    assert said("order, seen = [], set()\nseen.add_(3)\n", "order, seen = [], set()\nseen.add(3)\n", ["seen"]) == []


def test_a_module_s_own_attributes_set_in_init_are_not_writes_of_the_updated_buffer():
    solution = (
        "class S(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.scale = 2.0\n"
        "        self.register_buffer('std', torch.ones(3))\n    def fit(self, x):\n        self.std.copy_(x.std(0))\n"
        "        return self\nnorm = S().fit(X)\n"
    )
    code = solution.replace("        self.std.copy_(x.std(0))\n", "")
    assert said(code, solution, ["norm.std"], ("X", "torch", "nn"))[0].startswith(
        "the reference's fit() changes self.std"
    )
    # an item written into the buffer is a write
    code = solution.replace("self.std.copy_(x.std(0))", "self.std[:] = x.std(0)")
    assert said(code, solution, ["norm.std"], ("X", "torch", "nn")) == []
