"""Causes for bugs the feedback used to be silent about (benchmarks/feedback_silent.md), with
no authored mistakes: a list nothing filled (unfilled.py), a count where a fraction was meant
(counts.py), a buffer never registered and a hook never removed (scan.py), probabilities
over another dim (causes.py) and a leaf's .grad still None when the code read it
(errorcause.py). Each is said only where the data establishes it; each case is a
real wrong solution with real torch, and the last tests run them through `ptfund-tutor check`
in real kernels."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from test_checks_support import check, cli_check, verify, write_pack

pytestmark = pytest.mark.slow

LOSSES = [check(kind="value", expr="losses")]
TRAIN = "losses = []\nfor step in range(4):\n    loss = float(step)\n    losses.append(loss)\n"


def said(code: str, solution: str, checks, setup: str = "import torch\n") -> str:
    r = verify(code, solution, checks, setup=setup)
    assert not r["passed"]
    return "\n".join(r["mistakes"])


# ---------------------------------------------------------------- a list nothing filled


def test_a_list_no_line_appends_to_is_named():
    code = "losses = []\nfor step in range(4):\n    loss = float(step)\nprint(min(losses) if losses else None)\n"
    text = said(code, TRAIN, LOSSES)
    assert (
        "losses is empty, where the reference's holds 4 items: no line of your code appends or adds anything to it "
        "(the reference calls losses.append(...))"
    ) in text
    # a list the setup made, unpacked alongside another
    code = "a, losses = [], []\nfor step in range(4):\n    a.append(step)\n"
    assert "losses is empty" in said(code, "a, losses = [], [0.0, 1.0]\n", LOSSES)


def test_an_append_that_never_ran_is_named_with_its_line():
    code = "losses = []\nfor step in range(0):\n    losses.append(float(step))\n"
    text = said(code, TRAIN, LOSSES)
    assert (
        "losses is empty, where the reference's holds 4 items: your code's losses.append(...) at line 3 never ran"
        in (text)
    )


@pytest.mark.parametrize(
    "code",
    [
        # emptied again after the appends ran: "never ran" would be false
        "losses = []\nfor step in range(4):\n    losses.append(float(step))\n    losses = []\n",
        "losses = []\nfor step in range(4):\n    losses.append(float(step))\nlosses.clear()\n",
        # filled through a function, an alias or a parameter of the same name: the source does not show it
        "def record(xs):\n    pass\nlosses = []\nrecord(losses)\n",
        "losses = []\nhistory = losses\n",
        "losses = []\ndef f(losses):\n    losses.append(1.0)\nf([])\n",
    ],
)
def test_an_empty_list_the_source_does_not_settle_gets_no_cause(code):
    assert "losses is empty" not in said(code, TRAIN, LOSSES)


def test_an_append_after_the_code_raised_is_not_said_to_have_never_run():
    code = "losses = []\nfor step in range(4):\n    loss = 1 / 0\n    losses.append(loss)\n"
    r = verify(code, TRAIN, LOSSES)
    assert r["error"]["ename"] == "ZeroDivisionError"
    assert "never ran" not in "\n".join(r["mistakes"])


# ---------------------------------------------------------------- a count where a fraction was meant

ACC_SETUP = "import torch\ntorch.manual_seed(0)\npred = torch.randint(0, 3, (50,))\ny = torch.randint(0, 3, (50,))\n"
ACC_SOLUTION = "accuracy = (pred == y).float().mean().item()\naccs = [(pred[:k] == y[:k]).float().mean().item() * k / 50 for k in (20, 35, 50)]\n"


def test_an_accuracy_summed_is_named_as_a_count():
    code = "accuracy = (pred == y).float().sum().item()\naccs = [(pred[:k] == y[:k]).float().sum().item() for k in (20, 35, 50)]\n"
    r = verify(
        code, ACC_SOLUTION, [check(kind="value", expr="accuracy"), check(kind="value", expr="accs")], setup=ACC_SETUP
    )
    text = "\n".join(r["mistakes"])
    assert (
        "a whole number exactly 50 times the expected value: consistent with a count where a fraction was meant" in text
    )
    assert ".sum() where .mean() over 50 values (50 is the size of pred's dimension 0) was meant" in text


@pytest.mark.parametrize(
    ("code", "solution"),
    [
        # a whole multiple by chance: 4.0 where 0.5 was meant, and no size of 8 in play
        ("accuracy = 4.0\n", "accuracy = 0.5\n"),
        # a whole number 3 where 1.0 was meant: too small a factor to read as a count
        ("accuracy = 3.0\n", "accuracy = 1.0\n"),
        # 50 times, but not a whole number: no count
        ("accuracy = 0.62 * 50 + 0.5\n", "accuracy = 0.62\n"),
        # a whole multiple that is no size of any tensor of the reference's
        ("accuracy = 0.62 * 100\n", "accuracy = 0.62\n"),
    ],
)
def test_a_number_that_is_not_established_as_a_count_gets_no_cause(code, solution):
    r = verify(code, solution, [check(kind="value", expr="accuracy")], setup=ACC_SETUP)
    assert not r["passed"]
    assert "a count where a fraction" not in "\n".join(r["mistakes"])


# ---------------------------------------------------------------- a buffer never registered

MODULE = """\
import torch
from torch import nn

class Standardize(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.register_buffer("mean", mean)
{std}

    def forward(self, x):
        return (x - self.mean) / self.std

norm = Standardize(torch.zeros(4), torch.ones(4))
"""
NORM_CHECKS = [
    check(kind="module", expr="norm", buffer_names=["mean", "std"]),
    check(kind="value", expr="norm.state_dict()"),
]


def _module(std_line: str) -> str:
    return MODULE.format(std=std_line)


def test_a_buffer_never_registered_is_named():
    text = said(_module("        pass"), _module('        self.register_buffer("std", std)'), NORM_CHECKS)
    assert (
        "norm has no std at all, where the reference's norm holds it as a buffer: Standardize.__init__ never "
        'registers it; add self.register_buffer("std", ...) there'
    ) in text


def test_a_module_of_another_class_is_not_told_to_register_the_buffer_in_its_init():
    # The name holds a bare nn.Module, not the reference's class: no __init__ of its class is
    # the one to fix, so "nn.Module.__init__ never registers it" would be a false cause.
    code = _module('        self.register_buffer("std", std)') + "norm = nn.Module()\n"
    r = verify(code, _module('        self.register_buffer("std", std)'), NORM_CHECKS)
    assert not r["passed"]
    assert "never registers" not in "\n".join(r["mistakes"])


def test_a_buffer_kept_as_a_plain_attribute_is_not_said_to_be_missing():
    r = verify(_module("        self.std = std"), _module('        self.register_buffer("std", std)'), NORM_CHECKS)
    assert "never registers" not in "\n".join(r["mistakes"])
    assert "std is a plain tensor attribute" in r["checks"][0]["message"]


# ---------------------------------------------------------------- a hook left registered

HOOK_SETUP = "import torch\nmodel = torch.nn.Linear(3, 2)\nx = torch.randn(4, 3)\nshapes = []\n"
HOOK_SOLUTION = (
    "h = model.register_forward_hook(lambda m, i, o: shapes.append(o.shape))\nlogits = model(x)\nh.remove()\n"
)
HOOK_CHECKS = [check(kind="value", expr="len(model._forward_hooks)")]


def test_a_hook_left_registered_is_named():
    code = "h = model.register_forward_hook(lambda m, i, o: shapes.append(o.shape))\nlogits = model(x)\n"
    text = said(code, HOOK_SOLUTION, HOOK_CHECKS, setup=HOOK_SETUP)
    assert (
        "model still holds 1 hook where the reference's holds 0: consistent with a hook registered and never removed"
    ) in text


def test_a_hook_left_by_code_that_raised_before_its_remove_is_not_blamed():
    # modules/forward-hook with output.shape() called: the hook raised, so remove() never ran
    code = "h = model.register_forward_hook(lambda m, i, o: shapes.append(o.shape()))\nlogits = model(x)\nh.remove()\n"
    text = said(code, HOOK_SOLUTION, HOOK_CHECKS, setup=HOOK_SETUP)
    assert "never removed" not in text, text


def test_a_hook_the_reference_keeps_too_is_not_blamed():
    solution = "h = model.register_forward_hook(lambda m, i, o: shapes.append(o.shape))\nlogits = model(x)\n"
    code = "h = model.register_forward_hook(lambda m, i, o: shapes.append(o))\nlogits = model(x)\n"
    r = verify(code, solution, [check(kind="value", expr="[tuple(s) for s in shapes]")], setup=HOOK_SETUP)
    assert not r["passed"]
    assert "never removed" not in "\n".join(r["mistakes"])


# ---------------------------------------------------------------- a leaf's .grad still None

GRAD_SETUP = "import torch\nw = torch.ones(3, requires_grad=True)\n"
GRAD_SOLUTION = "loss = (w * 2).sum()\nloss.backward()\nnorm = w.grad.norm().item()\n"


def test_a_leaf_s_grad_read_before_any_backward_is_named():
    code = "loss = (w * 2).sum()\nnorm = w.grad.norm().item()\n"
    r = verify(code, GRAD_SOLUTION, [check(kind="value", expr="norm")], setup=GRAD_SETUP)
    assert r["error"]["ename"] == "AttributeError"
    assert (
        "line 2 of your code, `norm = w.grad.norm().item()`, raised AttributeError because w.grad is None there: "
        "no backward() had reached w yet"
    ) in "\n".join(r["mistakes"])


def test_a_non_leaf_s_grad_is_not_blamed_on_a_missing_backward():
    # h is no leaf: its .grad stays None after backward() too
    code = "h = w * 2\nloss = h.sum()\nloss.backward()\nnorm = h.grad.norm().item()\n"
    r = verify(code, GRAD_SOLUTION, [check(kind="value", expr="norm")], setup=GRAD_SETUP)
    assert r["error"]["ename"] == "AttributeError"
    assert "no backward() had reached" not in "\n".join(r["mistakes"])


# ---------------------------------------------------------------- probabilities over another dim

PROBS_SETUP = "import torch\ntorch.manual_seed(0)\nlogits = torch.randn(5, 3)\n"
PROBS = [check(kind="tensor", expr="probs", rtol=1e-5)]


def test_probabilities_over_another_dim_are_named():
    # not the softmax of the reference's own input (that is named as such): mean of two samples
    code = "probs = ((logits * 2).softmax(0) + logits.softmax(0)) / 2\n"
    text = said(code, "probs = logits.softmax(1)\n", PROBS, setup=PROBS_SETUP)
    assert (
        "probs sums to 1 along dim 0 where the expected value sums to 1 along dim 1: consistent with a softmax (or a "
        "normalisation) over dim 0 where dim 1 was meant"
    ) in text


@pytest.mark.parametrize(
    "code",
    [
        "probs = logits.exp()\n",  # positive, normalised along no dim
        "probs = logits.softmax(1) * 0.5\n",  # a factor, said as such
        "probs = logits.log_softmax(0)\n",  # negative values: no probabilities
    ],
)
def test_values_not_normalised_along_one_other_dim_get_no_such_cause(code):
    r = verify(code, "probs = logits.softmax(1)\n", PROBS, setup=PROBS_SETUP)
    assert not r["passed"]
    assert "sums to 1 along" not in "\n".join(r["mistakes"])


CE_SETUP = "import torch\nimport torch.nn.functional as F\ntorch.manual_seed(0)\nlogits = torch.randn(4, 3)\n"
CE_SETUP += "targets = torch.tensor([0, 2, 1, 2])\n"
CE_SOLUTION = "log_probs = F.log_softmax(logits, dim=1)\nloss = -log_probs[torch.arange(4), targets].mean()\n"
CE_CHECKS = [check(kind="value", expr="round(loss.item(), 5)")]


def test_log_probabilities_over_another_dim_are_named_where_only_their_result_is_checked():
    """training-loop/cross-entropy-contract: the check sees a scalar loss; the cause is in the
    code's own intermediate, log_probs, the same name as the reference's."""
    code = CE_SOLUTION.replace("dim=1", "dim=0")
    assert (
        "log_probs holds log-probabilities over dim 0 (its exp() sums to 1 along dim 0) where the expected value's "
        "are over dim 1: consistent with a log_softmax over dim 0 where dim 1 was meant"
    ) in said(code, CE_SOLUTION, CE_CHECKS, setup=CE_SETUP)


@pytest.mark.parametrize(
    "code",
    [
        CE_SOLUTION.replace("mean()", "sum()"),  # the intermediate is right: the bug is after it
        CE_SOLUTION.replace("F.log_softmax(logits, dim=1)", "F.log_softmax(logits * 2, dim=1)"),  # same dim
        CE_SOLUTION.replace("F.log_softmax(logits, dim=1)", "logits - logits.max(dim=0).values"),  # no log-probs
    ],
)
def test_an_intermediate_not_normalised_over_one_other_dim_is_not_blamed(code):
    r = verify(code, CE_SOLUTION, CE_CHECKS, setup=CE_SETUP)
    assert not r["passed"]
    assert "log-probabilities over dim" not in "\n".join(r["mistakes"])


# ---------------------------------------------------------------- real kernels

EXERCISES = """\
  - id: losses
    title: Keep the losses
    prompt: Keep each step's loss in `losses` and the accuracy in `accuracy`.
    setup: |
      import torch
      torch.manual_seed(0)
      pred = torch.randint(0, 3, (50,))
      y = torch.randint(0, 3, (50,))
      w = torch.ones(3, requires_grad=True)
    solution: |
      losses = []
      for step in range(4):
          loss = (w * step).sum()
          loss.backward()
          losses.append(w.grad.norm().item())
      accuracy = (pred == y).float().mean().item()
    checks:
      - kind: value
        expr: losses
      - kind: value
        expr: accuracy
  - id: probs
    title: Probabilities over the classes
    prompt: Average two softmaxes over the classes into `probs`.
    setup: |
      import torch
      torch.manual_seed(0)
      logits = torch.randn(5, 3)
    solution: |
      probs = ((logits * 2).softmax(1) + logits.softmax(1)) / 2
    checks:
      - kind: tensor
        expr: probs
        rtol: 1.0e-5
  - id: hook
    title: A hook removed after use
    prompt: Record the output shape with a forward hook, then remove it.
    setup: |
      import torch
      model = torch.nn.Linear(3, 2)
      x = torch.randn(4, 3)
      shapes = []
    solution: |
      handle = model.register_forward_hook(lambda m, i, o: shapes.append(o.shape))
      logits = model(x)
      handle.remove()
    checks:
      - kind: value
        expr: len(model._forward_hooks)
  - id: standardize
    title: Standardize with buffers
    prompt: Write `Standardize` with buffers `mean` and `std`; make `norm`.
    setup: |
      import torch
      from torch import nn
    solution: |
      class Standardize(nn.Module):
          def __init__(self, mean, std):
              super().__init__()
              self.register_buffer("mean", mean)
              self.register_buffer("std", std)

          def forward(self, x):
              return (x - self.mean) / self.std

      norm = Standardize(torch.zeros(4), torch.ones(4))
    checks:
      - kind: module
        expr: norm
        buffer_names: [mean, std]
  - id: scaler
    title: A step through a GradScaler
    prompt: Write `train_step(model, opt, scaler, x, y)` with float16 autocast and a GradScaler.
    setup: |
      import torch
      import torch.nn.functional as F


      def run(train_step, overflow=None):
          torch.manual_seed(0)
          model = torch.nn.Linear(4, 1)
          opt = torch.optim.SGD(model.parameters(), lr=0.1)
          scaler = torch.amp.GradScaler("cpu", init_scale=2.0**8, growth_interval=2)
          x, y = torch.randn(5, 8, 4), torch.randn(5, 8, 1)
          if overflow is not None:
              x[overflow] *= 1e5  # float16 overflows: the scaler skips this step
          for i in range(5):
              train_step(model, opt, scaler, x[i], y[i])
          return [round(v, 4) for v in model.weight.detach().flatten().tolist()] + [scaler.get_scale()]
    solution: |
      def train_step(model, opt, scaler, x, y):
          opt.zero_grad()
          with torch.autocast(device_type="cpu", dtype=torch.float16):
              loss = F.mse_loss(model(x), y)
          scaler.scale(loss).backward()
          scaler.unscale_(opt)
          torch.nn.utils.clip_grad_norm_(model.parameters(), 0.05)
          scaler.step(opt)
          scaler.update()
    checks:
      - kind: value
        expr: run(train_step)
      - kind: value
        expr: run(train_step, overflow=2)
"""
EXERCISES += """\
  - id: port
    title: Port weights
    prompt: Copy `W` (in x out) and `b` into a new `nn.Linear` named `layer`.
    setup: |
      import torch
      from torch import nn
      torch.manual_seed(0)
      W, b = torch.randn(3, 2), torch.randn(2)
    solution: |
      layer = nn.Linear(3, 2)
      with torch.no_grad():
          layer.weight.copy_(W.T)
          layer.bias.copy_(b)
    checks:
      - kind: tensor
        expr: layer.weight
      - kind: tensor
        expr: layer.bias
"""
SCALER = next(e for e in yaml.safe_load(EXERCISES) if e["id"] == "scaler")


@pytest.fixture(scope="module")
def pack(tmp_path_factory) -> Path:
    return write_pack(tmp_path_factory.mktemp("packs") / "silent", EXERCISES)


def check_in_kernels(pack: Path, home: Path, exercise: str, code: str) -> dict:
    return cli_check(pack, home, f"silent:bugs/{exercise}", code)


def test_in_a_real_kernel_an_unfilled_list_and_a_count_are_named(pack, tmp_path):
    code = (
        "losses = []\nfor step in range(4):\n    loss = (w * step).sum()\n    loss.backward()\n"
        "accuracy = (pred == y).float().sum().item()\n"
    )
    data = check_in_kernels(pack, tmp_path / "home", "losses", code)
    text = "\n".join(data["mistakes"])
    assert "losses is empty, where the reference's holds 4 items: no line of your code appends" in text, data
    assert "accuracy is" in text and "consistent with a count where a fraction was meant" in text, data


def test_in_a_real_kernel_a_leaf_s_grad_read_before_backward_is_named(pack, tmp_path):
    code = "losses = []\nfor step in range(4):\n    loss = (w * step).sum()\n    losses.append(w.grad.norm().item())\n"
    data = check_in_kernels(pack, tmp_path / "home", "losses", code)
    assert any("because w.grad is None there: no backward() had reached w yet" in m for m in data["mistakes"]), data


def test_in_a_real_kernel_a_buffer_never_registered_is_named(pack, tmp_path):
    code = (
        "class Standardize(nn.Module):\n    def __init__(self, mean, std):\n        super().__init__()\n"
        '        self.register_buffer("mean", mean)\n\n    def forward(self, x):\n        return x - self.mean\n\n'
        "norm = Standardize(torch.zeros(4), torch.ones(4))\n"
    )
    data = check_in_kernels(pack, tmp_path / "home", "standardize", code)
    assert any("Standardize.__init__ never registers it" in m for m in data["mistakes"]), data


def test_in_a_real_kernel_probabilities_over_another_dim_are_named(pack, tmp_path):
    code = "probs = ((logits * 2).softmax(0) + logits.softmax(0)) / 2\n"
    data = check_in_kernels(pack, tmp_path / "home", "probs", code)
    assert any(
        "probs sums to 1 along dim 0 where the expected value sums to 1 along dim 1" in m for m in data["mistakes"]
    )


def test_in_a_real_kernel_a_hook_left_registered_is_named(pack, tmp_path):
    code = "handle = model.register_forward_hook(lambda m, i, o: shapes.append(o.shape))\nlogits = model(x)\n"
    data = check_in_kernels(pack, tmp_path / "home", "hook", code)
    assert any("model still holds 1 hook where the reference's holds 0" in m for m in data["mistakes"]), data


# ---------------------------------------------------------------- two values in each other's place

PAIR = [check(kind="value", expr="emb"), check(kind="value", expr="sim")]
PAIR_SETUP = "import torch\ntorch.manual_seed(0)\nx = torch.randn(5, 3)\n"
PAIR_SOLUTION = "def embed(x):\n    emb = x * 2\n    return emb, emb @ emb.T\nemb, sim = embed(x)\n"


def test_two_values_in_each_others_place_are_named():
    code = "def embed(x):\n    emb = x * 2\n    return emb @ emb.T, emb\nemb, sim = embed(x)\n"
    # the shapes differ here: (5, 3) and (5, 5); a square pair swaps alike
    assert (
        "emb and sim are in each other's place: your emb is what sim should be and your sim is what emb should be"
        in said(code, PAIR_SOLUTION, PAIR, setup=PAIR_SETUP)
    )
    square = "a = x[:3] * 2\nb = x[:3] + 1\n"
    text = said(
        "a = x[:3] + 1\nb = x[:3] * 2\n",
        square,
        [check(kind="value", expr="a"), check(kind="value", expr="b")],
        setup=PAIR_SETUP,
    )
    assert "a and b are in each other's place" in text


@pytest.mark.parametrize(
    "code",
    [
        "def embed(x):\n    emb = x * 3\n    return emb, emb @ emb.T\nemb, sim = embed(x)\n",  # both wrong, not crossed
        "def embed(x):\n    emb = x * 2\n    return emb, emb @ emb.T\nemb, sim = embed(x)\nsim = emb\n",  # one crossed only
    ],
    ids=["both wrong", "one way only"],
)
def test_values_that_are_not_crossed_both_ways_are_not_called_swapped(code):
    r = verify(code, PAIR_SOLUTION, PAIR, setup=PAIR_SETUP)
    assert "each other's place" not in "\n".join(r["mistakes"])


def test_two_checks_whose_values_are_in_each_others_place_are_named():
    checks = [check(kind="tensor", expr="pair(x)[0]"), check(kind="tensor", expr="pair(x)[1]")]
    solution = "def pair(x):\n    return x > 0, x * 2\n"
    text = said("def pair(x):\n    return x * 2, x > 0\n", solution, checks, setup=PAIR_SETUP)
    assert "pair(x)[0] and pair(x)[1] are in each other's place: your pair(x)[0] is what pair(x)[1] should be" in text


# ---------------------------------------------------------------- a call only the reference's function makes


def test_a_call_only_the_reference_s_function_makes_is_named_with_both_roles_in_one_process():
    """With both roles in one process the learner's trace wrappers sit around the judge's: the
    reference's calls inside the function a check calls used to go unrecorded there (a real
    judge's kernel holds one tracer), so nothing compared them with the learner's."""
    setup = "import io, torch\ntorch.manual_seed(0)\nsrc = torch.nn.Linear(2, 2)\ndst = torch.nn.Linear(2, 2)\n"
    head = "def to_bytes(m):\n    b = io.BytesIO()\n    torch.save(m.state_dict(), b)\n    return b.getvalue()\n"
    load = "def from_bytes(data, model):\n    state = torch.load(io.BytesIO(data), weights_only=True)\n"
    solution = head + load + "    model.load_state_dict(state)\n    return model\n"
    code = head + load + "    return model\n"
    checks = [check(kind="value", expr="from_bytes(to_bytes(src), dst).weight.sum().item()")]
    assert (
        "the reference calls model.load_state_dict(...); your code never does, so model keeps the state it had"
        in said(code, solution, checks, setup=setup)
    )


# ---------------------------------------------------------------- a state a function never restores

RESTORE_SETUP = """import copy
import torch
def make():
    torch.manual_seed(0)
    model = torch.nn.Linear(2, 1)
    return model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
def step(model, opt):
    opt.zero_grad()
    model(torch.ones(4, 2)).pow(2).sum().backward()
    opt.step()
def gap(restore):
    a, opt_a = make()
    step(a, opt_a)
    ck = {"model": copy.deepcopy(a.state_dict()), "opt": copy.deepcopy(opt_a.state_dict())}
    b, opt_b = make()
    restore(ck, b, opt_b)
    step(a, opt_a)
    step(b, opt_b)
    return (a.weight - b.weight).abs().max().item()
def returned(restore):
    a, opt_a = make()
    step(a, opt_a)
    return restore({"model": a.state_dict(), "opt": opt_a.state_dict()}, *make())
"""
RESTORE = "def restore(ck, model, opt):\n    model.load_state_dict(ck['model'])\n    opt.load_state_dict(ck['opt'])\n    return 1\n"
# The gap's expected value is authored (the reference's restore does not run for it); the
# second check runs the reference's restore.
RESTORE_CHECKS = [
    check(kind="value", expr="round(gap(restore), 6)", expected="0.0"),
    check(kind="value", expr="returned(restore)"),
]


def test_a_state_the_reference_s_function_restores_and_the_learner_s_never_does_is_named():
    code = RESTORE.replace("    opt.load_state_dict(ck['opt'])\n", "")
    assert (
        "the reference's restore() calls opt.load_state_dict(...); your code never does, so opt keeps the state it had"
    ) in said(code, RESTORE, RESTORE_CHECKS, setup=RESTORE_SETUP)


def test_a_restore_with_other_names_is_not_blamed_for_a_state_it_restores():
    code = "def restore(c, m, o):\n    m.load_state_dict(c['model'])\n    o.load_state_dict(c['opt'])\n    return 2\n"
    r = verify(code, RESTORE, RESTORE_CHECKS, setup=RESTORE_SETUP)
    assert not r["passed"]
    assert "load_state_dict" not in "\n".join(r["mistakes"]), r["mistakes"]


# ---------------------------------------------------------------- a freeze never written

FREEZE_SETUP = (
    "import torch\ntorch.manual_seed(0)\nmodel = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Linear(3, 1))\n"
)
FREEZE = "model[0].requires_grad_(False)\ntrainable = [n for n, p in model.named_parameters() if p.requires_grad]\n"
FREEZE_CHECKS = [check(kind="value", expr="trainable")]


def test_a_freeze_the_learner_never_writes_is_named():
    code = "trainable = [n for n, p in model.named_parameters() if p.requires_grad]\n"  # reads it, sets nothing
    assert (
        "the reference freezes model[0] with model[0].requires_grad_(False); your code never sets requires_grad "
        "anywhere, so model[0]'s parameters still require grad"
    ) in said(code, FREEZE, FREEZE_CHECKS, setup=FREEZE_SETUP)


@pytest.mark.parametrize(
    "freeze",
    [
        "for p in model[1].parameters():\n    p.requires_grad = False\n",  # another layer, by assignment
        "for p in model[1].parameters():\n    setattr(p, 'requires_grad', False)\n",
        "model[1].requires_grad_(False)\n",
        "model[0].requires_grad(False)\n",  # raises AttributeError: that is what to say
    ],
)
def test_a_freeze_written_another_way_is_not_said_to_be_missing(freeze):
    code = freeze + "trainable = [n for n, p in model.named_parameters() if p.requires_grad]\n"
    r = verify(code, FREEZE, FREEZE_CHECKS, setup=FREEZE_SETUP)
    assert not r["passed"]
    assert "never sets requires_grad" not in "\n".join(r["mistakes"])


# ---------------------------------------------------------------- a GradScaler's protocol

SCALED = [
    "def train_step(model, opt, scaler, x, y):\n",
    "    opt.zero_grad()\n",
    '    with torch.autocast(device_type="cpu", dtype=torch.float16):\n',
    "        loss = F.mse_loss(model(x), y)\n",
    "    scaler.scale(loss).backward()\n",
    "    scaler.unscale_(opt)\n",
    "    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.05)\n",
    "    scaler.step(opt)\n",
    "    scaler.update()\n",
]


def scaled(*drop: int, swap: tuple = (), replace: dict | None = None) -> str:
    lines = list(SCALED)
    if swap:
        lines[swap[0]], lines[swap[1]] = lines[swap[1]], lines[swap[0]]
    for i, text in (replace or {}).items():
        lines[i] = text
    return "".join(line for i, line in enumerate(lines) if i not in drop)


@pytest.mark.parametrize(
    "code, sentence",
    [
        (
            scaled(5),  # unscale_ dropped
            "the reference calls scaler.unscale_(opt) before clip_grad_norm_; your code never does, so "
            "clip_grad_norm_ measures the gradients while they are still multiplied by the scale",
        ),
        (
            scaled(swap=(5, 6)),  # clipped, then unscaled
            "your code clips the gradients before scaler.unscale_(opt): clip_grad_norm_ measured them still "
            "multiplied by the scale",
        ),
        (
            scaled(8),  # update dropped: the next iteration's unscale_ raises
            "your code calls scaler.unscale_(opt) after scaler.step(opt) with no scaler.update() between: "
            "GradScaler wants update() after every step() (it adjusts the scale and readies the scaler for the next "
            'iteration), which is why that call raises "unscale_() is being called after step()"',
        ),
        (
            scaled(5, 8),  # and without unscale_, the next step() raises
            "your code calls scaler.step(opt) after scaler.step(opt) with no scaler.update() between",
        ),
        (
            scaled(replace={7: "    opt.step()\n"}),
            "the reference steps through scaler.step(opt); your code calls opt.step() itself, so a step whose "
            "gradients overflowed to inf or nan is applied instead of skipped",
        ),
        (
            scaled(7),  # the scaler skips the overflowing step: not "after each backward()"
            "the reference calls opt.step() 4 times for its 5 backward() calls; your code never calls it",
        ),
    ],
)
def test_a_step_through_a_grad_scaler_that_breaks_its_protocol_is_named(code, sentence):
    checks = [check(kind="value", expr="run(train_step, overflow=2)")]
    assert sentence in said(code, SCALER["solution"], checks, setup=SCALER["setup"])


def test_a_scaler_that_steps_two_optimizers_before_one_update_is_not_blamed():
    setup = SCALER["setup"] + (
        "def two(train_step):\n    torch.manual_seed(0)\n    a, b = torch.nn.Linear(4, 1), torch.nn.Linear(4, 1)\n"
        "    oa, ob = torch.optim.SGD(a.parameters(), lr=0.1), torch.optim.SGD(b.parameters(), lr=0.1)\n"
        '    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**8)\n'
        "    for _ in range(3):\n        train_step(a, b, oa, ob, scaler, torch.randn(8, 4))\n"
        "    return round(a.weight.sum().item(), 4), round(b.weight.sum().item(), 4)\n"
    )
    solution = (
        "def train_step(a, b, oa, ob, scaler, x):\n    oa.zero_grad()\n    ob.zero_grad()\n"
        "    scaler.scale((a(x) - b(x)).pow(2).mean() + a(x).mean()).backward()\n"
        "    scaler.unscale_(oa)\n    scaler.unscale_(ob)\n    scaler.step(oa)\n    scaler.step(ob)\n"
        "    scaler.update()\n"
    )
    code = solution.replace("a(x).mean()", "b(x).mean()")  # wrong, with the same protocol
    r = verify(code, solution, [check(kind="value", expr="two(train_step)")], setup=setup)
    assert not r["passed"]
    assert "update()" not in "\n".join(r["mistakes"]), r["mistakes"]


def test_in_a_real_kernel_a_scaler_never_updated_is_named(pack, tmp_path):
    data = check_in_kernels(pack, tmp_path / "home", "scaler", scaled(8))
    assert any("with no scaler.update() between" in m for m in data["mistakes"]), data
    data = check_in_kernels(pack, tmp_path / "home", "scaler", scaled(5))
    assert any("the reference calls scaler.unscale_(opt) before clip_grad_norm_" in m for m in data["mistakes"]), data


# ---------------------------------------------------------------- a process-wide switch

SWITCH_SETUP = """import contextlib
import torch
def inside(block):
    torch.use_deterministic_algorithms(False)
    try:
        with block():
            return torch.are_deterministic_algorithms_enabled()
    finally:
        torch.use_deterministic_algorithms(False)
def after(block):
    torch.use_deterministic_algorithms(False)
    try:
        with block():
            pass
        return torch.are_deterministic_algorithms_enabled()
    finally:
        torch.use_deterministic_algorithms(False)
"""
SWITCH = """@contextlib.contextmanager
def block():
    was = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(was)
"""
SWITCH_CHECKS = [check(kind="value", expr="inside(block)"), check(kind="value", expr="after(block)")]


@pytest.mark.parametrize(
    "code, sentence",
    [
        (
            SWITCH.replace("    torch.use_deterministic_algorithms(True)\n", ""),
            "the reference's block() calls torch.use_deterministic_algorithms(...) with True, then False; yours "
            "with False only, never with True",
        ),
        (
            SWITCH.replace("        torch.use_deterministic_algorithms(was)\n", "        pass\n"),
            "the reference's block() calls torch.use_deterministic_algorithms(...) with True, then False; yours "
            "with True only, never with False",
        ),
        (
            SWITCH.replace("(True)", "(was)"),
            "the reference's block() calls torch.use_deterministic_algorithms(...) with True, then False; yours "
            "with False, then False, never with True",
        ),
    ],
)
def test_a_switch_the_reference_sets_to_values_the_learner_never_gives_it_is_named(code, sentence):
    assert sentence in said(code, SWITCH, SWITCH_CHECKS, setup=SWITCH_SETUP)


def test_a_switch_set_through_the_setup_s_helper_is_not_compared():
    """Only the code's own calls count: the setup's helpers set the switch on both sides."""
    code = SWITCH.replace(
        "torch.use_deterministic_algorithms(True)",
        "torch.use_deterministic_algorithms(True)\n    raise ValueError('no')",
    )
    r = verify(code, SWITCH, SWITCH_CHECKS, setup=SWITCH_SETUP)
    assert not r["passed"]
    assert not any("use_deterministic_algorithms" in m and "never" in m for m in r["mistakes"]), r["mistakes"]


# ---------------------------------------------------------------- an in-place update never written


def test_in_a_real_kernel_an_update_no_line_makes_is_named_and_an_alias_is_not(pack, tmp_path):
    code = "layer = nn.Linear(3, 2)\nwith torch.no_grad():\n    layer.bias.copy_(b)\n"
    data = check_in_kernels(pack, tmp_path / "home", "port", code)
    assert (
        "the reference changes layer.weight in place with layer.weight.copy_(W.T); no line of your code changes "
        "layer.weight (no in-place call on it, no assignment to it or into it), so it keeps the values it was made "
        "with"
    ) in data["mistakes"], data
    # the weight written through another name, wrongly (not transposed): not "never changed"
    code = "layer = nn.Linear(3, 2)\nw = layer.weight\nwith torch.no_grad():\n    w.copy_(W.T.flip(0))\n    layer.bias.copy_(b)\n"
    data = check_in_kernels(pack, tmp_path / "home", "port", code)
    assert not any("no line of your code changes" in m for m in data["mistakes"]), data


def test_an_out_of_place_call_whose_result_is_dropped_is_named():
    setup = "import torch\nx = torch.zeros(3)\n"
    text = said("x.add(1)\n", "x.add_(1)\n", [check(kind="tensor", expr="x")], setup=setup)
    assert "your code calls x.add(1) and drops what it returns: add() is out of place" in text


# ---------------------------------------------------------------- one raising line, said once


def test_a_line_that_raises_in_the_codes_run_and_in_a_checks_call_is_named_once():
    """The code's own run and a check's call of its function raise at the same line: one
    sentence names it (with the values of the first), not one per call that reached it."""
    setup = "import torch\nX = torch.randn(6, 2)\ny = torch.tensor([0, 1, 2, 0, 1, 2])\n"
    solution = (
        "def step(xb, yb):\n"
        "    return torch.nn.functional.cross_entropy(torch.cat([xb, xb[:, :1]], 1), yb).item()\n"
        "out = step(X, y)\n"
    )
    code = solution.replace("yb).item()", "yb.float()).item()")
    checks = [
        check(kind="value", expr="out"),
        check(kind="value", id="half", expr="step(X[:3], y[:3])"),
    ]
    text = said(code, solution, checks, setup=setup)
    assert text.count("line 2 of your code") == 1, text
    assert "raised RuntimeError; at that point" in text and "xb has shape (6, 2)" in text, text


# ---------------------------------------------------------------- a python check's own comparison

RELU_SOLUTION = "def f(x):\n    return x * 2 - 1\n"
RELU_EXTRA = "import torch\ndef f(x):\n    return torch.relu(x * 2 - 1)\n"
X = "x = torch.linspace(-1, 1, 8)\n"


def _python(code: str, solution: str, check_code: str) -> str:
    r = verify(code, solution, [check(kind="python", code=check_code, message="f(x) should be 2x - 1")])
    assert not r["passed"]
    return "\n".join(c["message"] for c in r["checks"])


def test_a_python_checks_allclose_names_the_learners_value_against_the_other():
    # modules/mlp's forward check compares the learner's output with a twin's: a ReLU after
    # the last layer got numbers only.
    text = _python(RELU_EXTRA, RELU_SOLUTION, X + "got, want = f(x), ref.f(x)\nassert torch.allclose(got, want)\n")
    assert (
        "taking want as the expected value, got is the expected value with its negative entries set to 0 "
        "(got == expected.clamp(min=0)) and the same elsewhere: consistent with a ReLU (or a clamp at 0) where none "
        "belongs"
    ) in text
    # written the other way round: the learner's value is still the one described
    text = _python(RELU_EXTRA, RELU_SOLUTION, X + "assert torch.allclose(ref.f(x), f(x))\n")
    assert "taking ref.f(x) as the expected value, f(x) is the expected value with its negative entries" in text
    # the ReLU missing
    text = _python(RELU_SOLUTION, RELU_EXTRA, X + "assert torch.allclose(f(x), ref.f(x))\n")
    assert "f(x) has negative entries where the expected value has 0" in text


def test_a_python_checks_comparison_of_values_the_learner_did_not_return_gets_no_cause():
    # Neither side is what the learner's code returned (a value derived from it is a new
    # object): no side is "the expected" one, so no cause is said, only the values.
    code = X + "got = f(x) + 0\nassert torch.allclose(got, torch.relu(got) * 0 + ref.f(x))\n"
    text = _python(RELU_EXTRA, RELU_SOLUTION, code)
    assert "failed: got is tensor(" in text and "ReLU" not in text and "expected value" not in text


def test_a_hook_on_a_tensor_that_requires_no_grad_says_so():
    # state_dict() holds detached tensors: the one on the raising line requires no grad,
    # which is what the error is about.
    setup = "import torch\nmodel = torch.nn.Linear(4, 2)\n"
    solution = "handles = [p.register_hook(lambda g: g) for p in model.parameters()]\nn = len(handles)\n"
    code = "handles = []\nfor p in model.state_dict().values():\n    handles.append(p.register_hook(lambda g: g))\nn = len(handles)\n"
    text = said(code, solution, [check(kind="value", expr="n")], setup=setup)
    assert "raised RuntimeError; at that point p has shape (2, 4), float32 on cpu, not requiring grad" in text, text
    # where the error is not about gradients, whether a tensor requires grad is no part of it
    text = said("n = model.weight @ model.weight\n", "n = 2\n", [check(kind="value", expr="n")], setup=setup)
    assert "model.weight has shape (2, 4), float32 on cpu" in text and "requiring grad" not in text, text


def test_a_sequence_on_a_line_that_raised_type_error_is_said_as_one():
    # A forward pre-hook gets the forward's positional arguments as a tuple: a tuple times a
    # float raises, and that args is a tuple is what explains it.
    setup = "import torch\nmodel = torch.nn.Linear(4, 2)\nx = torch.ones(5, 4)\n"
    solution = (
        "def hook(module, args):\n    return (args[0] * 2.0,)\n"
        "h = model.register_forward_pre_hook(hook)\nout = model(x)\n"
    )
    code = solution.replace("(args[0] * 2.0,)", "args * 2.0")
    text = said(code, solution, [check(kind="tensor", expr="out")], setup=setup)
    assert "raised TypeError; at that point args is a tuple of 1 tensor of shape (5, 4)" in text, text
    # a list on a line that raised another error is not part of its story
    code = "rows = [x]\nout = rows[0] @ x\n"
    text = said(code, "rows = [x]\nout = x @ x.T\n", [check(kind="tensor", expr="out")], setup=setup)
    assert "rows is a list" not in text, text


def test_a_half_result_widened_back_is_said_as_that():
    setup = "import torch\nvalues = torch.linspace(-3.3, 70000.7, 9)\n"
    checks = [check(kind="tensor", expr="x16", compare=["dtype", "values"])]
    r = verify("x16 = values.to(torch.float16).float()\n", "x16 = values.to(torch.float16)\n", checks, setup=setup)
    assert not r["passed"]
    assert (
        "its values are exactly the expected torch.float16 values, held as torch.float32, consistent with a "
        "conversion to torch.float16 and one back"
    ) in r["checks"][0]["message"], r
    # whole numbers are the same in every format: no such reading, only the plain advice
    setup = "import torch\nvalues = torch.arange(9.0)\n"
    r = verify("x16 = values.clone()\n", "x16 = values.to(torch.float16)\n", checks, setup=setup)
    assert "consistent with a conversion" not in r["checks"][0]["message"], r
    assert "convert with .to(torch.float16)" in r["checks"][0]["message"], r


def test_the_values_of_a_max_where_the_reference_takes_positions_are_named():
    setup = "import torch\nlogits = torch.tensor([[0.1, 2.0], [3.0, 0.5], [0.2, 0.4]])\ny = torch.tensor([1, 0, 0])\n"
    solution = "accuracy = (logits.argmax(dim=1) == y).float().mean().item()\n"
    checks = [check(kind="value", expr="accuracy")]
    for taken in ("logits.max(dim=1)[0]", "logits.max(1).values", "torch.max(logits, 1)[0]"):
        text = said(f"accuracy = ({taken} == y).float().mean().item()\n", solution, checks, setup=setup)
        assert f"line 1 of your code, `{taken}`, takes the largest values themselves" in text, text
    # the positions taken another way are right; a max over everything is no such reading
    assert verify("accuracy = (logits.max(dim=1)[1] == y).float().mean().item()\n", solution, checks, setup=setup)[
        "passed"
    ]
    text = said("accuracy = float(logits.max() == 2.0)\n", solution, checks, setup=setup)
    assert "takes the largest values themselves" not in text, text
