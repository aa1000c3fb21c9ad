"""The product's own diagnosis, with no authored mistakes or messages: the protocol trace
diffed against the reference, and the built-in signatures, each on a real buggy snippet
run with real torch; the sentence is asserted. Also: silent when the checks pass."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from test_checks_support import check, verify

# Every test here verifies in a real kernel.
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent

TRAIN_SETUP = textwrap.dedent(
    """
    import torch
    from torch import nn
    torch.manual_seed(0)
    X = torch.randn(16, 3)
    y = torch.randint(0, 2, (16,))
    model = nn.Linear(3, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    loss_fn = nn.CrossEntropyLoss()
    """
)


def train(body: str, steps: int = 3) -> str:
    return f"for _ in range({steps}):\n" + textwrap.indent(textwrap.dedent(body), "    ")


GOOD_LOOP = train(
    """
    opt.zero_grad()
    loss = loss_fn(model(X), y)
    loss.backward()
    opt.step()
    """
)
WEIGHT = [check(kind="tensor", expr="model.weight", rtol=1e-5)]


def said(code: str, solution: str, checks, setup: str = "import torch\n") -> str:
    r = verify(code, solution, checks, setup=setup)
    assert not r["passed"]
    return "\n".join(r["mistakes"])


def test_missing_zero_grad_is_named_with_the_reference_s_count():
    code = train("loss = loss_fn(model(X), y)\nloss.backward()\nopt.step()\n")
    text = said(code, GOOD_LOOP, WEIGHT, TRAIN_SETUP)
    assert (
        "the reference calls opt.zero_grad() before each of its 3 backward() calls; your code never calls it, "
        "so gradients add up across batches" in text
    )


def test_a_missing_zero_grad_is_not_the_cause_where_nothing_could_add_up():
    """One backward() onto fresh gradients: the reference's zero_grad() before it clears
    nothing, so its absence cannot be why the weights differ (here: a wrong lr)."""
    one_step = "opt.zero_grad()\nloss = loss_fn(model(X), y)\nloss.backward()\nopt.step()\n"
    code = "loss = loss_fn(model(X), y)\nloss.backward()\nfor p in model.parameters():\n    p.data -= 0.1 * p.grad\n"
    text = said(code, one_step, WEIGHT, TRAIN_SETUP)
    assert "zero_grad" not in text and "add up" not in text, text
    # Two backward() calls without a clear: the second adds onto the first's gradients.
    code = "for _ in range(2):\n    loss = loss_fn(model(X), y)\n    loss.backward()\n    opt.step()\n"
    assert "so gradients add up across batches" in said(code, train(one_step, 2), WEIGHT, TRAIN_SETUP)


def test_a_hand_written_update_or_a_second_step_is_not_called_a_missing_or_early_step():
    """No opt.step() but p.data -= lr * p.grad changes the weights: "the weights never
    change" would be false. Two step() calls after one backward() are not a step before it."""
    one_step = "opt.zero_grad()\nloss = loss_fn(model(X), y)\nloss.backward()\nopt.step()\n"
    by_hand = "loss = loss_fn(model(X), y)\nloss.backward()\nfor p in model.parameters():\n    p.data -= 0.1 * p.grad\n"
    assert "never change" not in said(by_hand, one_step, WEIGHT, TRAIN_SETUP)
    twice = "opt.zero_grad()\nloss = loss_fn(model(X), y)\nloss.backward()\nopt.step()\nopt.step()\n"
    text = said(twice, one_step, WEIGHT, TRAIN_SETUP)
    assert "before loss.backward()" not in text, text
    assert "your code calls opt.step() twice for 1 backward() call: a step() with no backward() since" in text, text


def test_missing_step():
    code = train("opt.zero_grad()\nloss = loss_fn(model(X), y)\nloss.backward()\n")
    assert "your code never calls it, so the gradients are computed but the weights never change" in said(
        code, GOOD_LOOP, WEIGHT, TRAIN_SETUP
    )


def test_step_before_backward():
    code = train("opt.zero_grad()\nloss = loss_fn(model(X), y)\nopt.step()\nloss.backward()\n")
    assert "your code calls opt.step() before loss.backward()" in said(code, GOOD_LOOP, WEIGHT, TRAIN_SETUP)


def test_zero_grad_between_backward_and_step():
    code = train("loss = loss_fn(model(X), y)\nloss.backward()\nopt.zero_grad()\nopt.step()\n")
    assert "your code calls zero_grad() between loss.backward() and opt.step()" in said(
        code, GOOD_LOOP, WEIGHT, TRAIN_SETUP
    )


def test_silent_when_the_checks_pass_even_if_the_traces_differ():
    # zero_grad(set_to_none) vs model.zero_grad: different calls, same result: nothing to say
    code = train("model.zero_grad()\nloss = loss_fn(model(X), y)\nloss.backward()\nopt.step()\n")
    r = verify(code, GOOD_LOOP, WEIGHT, setup=TRAIN_SETUP)
    assert r["passed"] and r["mistakes"] == []


EVAL_SETUP = textwrap.dedent(
    """
    import torch
    from torch import nn
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 2))
    X = torch.randn(32, 4)
    """
)


def test_eval_never_called():
    solution = "model.eval()\nwith torch.no_grad():\n    out = model(X)\nmodel.train()\n"
    code = "with torch.no_grad():\n    out = model(X)\n"
    text = said(code, solution, [check(kind="tensor", expr="out")], EVAL_SETUP)
    assert "the reference switches model to eval mode (model.eval(), once); your code never does" in text


def test_train_never_restored_after_validation():
    # No training follows the eval(): what the trace establishes is the mode the code leaves.
    text = said(
        "model.train()\nmodel.eval()\nflag = model.training\n",
        "model.train()\nmodel.eval()\nmodel.train()\nflag = model.training\n",
        [check(kind="value", expr="flag")],
        EVAL_SETUP,
    )
    assert "does not switch back" not in text
    assert "your code leaves model in eval mode (its last switch is model.eval())" in text


def test_loss_on_probabilities():
    setup = "import torch\nimport torch.nn.functional as F\nlogits = torch.tensor([[2.0, -1.0], [0.5, 1.5]])\n"
    text = said(
        "loss = F.cross_entropy(logits.softmax(dim=1), torch.tensor([0, 1]))",
        "loss = F.cross_entropy(logits, torch.tensor([0, 1]))",
        [check(kind="tensor", expr="loss", rtol=1e-5)],
        setup,
    )
    assert "the cross-entropy loss received probabilities (each row sums to 1)" in text
    # A softmax over the batch: the columns sum to 1, not the rows.
    text = said(
        "loss = F.cross_entropy(logits.softmax(dim=0), torch.tensor([0, 1]))",
        "loss = F.cross_entropy(logits, torch.tensor([0, 1]))",
        [check(kind="tensor", expr="loss", rtol=1e-5)],
        setup,
    )
    assert "received values that sum to 1 down each column, over the batch (a softmax along dim 0)" in text
    # nll_loss given a log_softmax over the batch: log-probabilities, but each column's
    text = said(
        "loss = F.nll_loss(logits.log_softmax(dim=0), torch.tensor([0, 1]))",
        "loss = F.nll_loss(logits.log_softmax(dim=1), torch.tensor([0, 1]))",
        [check(kind="tensor", expr="loss", rtol=1e-5)],
        setup,
    )
    assert "received log-probabilities taken down each column, over the batch (a log_softmax along dim 0)" in text
    assert "not log-probabilities" not in text


def test_loss_tensors_kept_instead_of_item():
    solution = train(
        "opt.zero_grad()\nloss = loss_fn(model(X), y)\nloss.backward()\nopt.step()\nhist.append(loss.item())"
    )
    code = solution.replace("loss.item()", "loss")
    text = said(
        "hist = []\n" + code,
        "hist = []\n" + solution,
        [check(kind="value", expr="[type(v).__name__ for v in hist]")],
        TRAIN_SETUP,
    )
    assert "hist holds loss tensors that still carry their autograd graph (grad_fn=NllLossBackward0)" in text
    assert "store loss.item() instead" in text


def test_layers_in_a_plain_list():
    setup = "import torch\nfrom torch import nn\n"
    src = textwrap.dedent(
        """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = LAYERS
            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                return x
        torch.manual_seed(0)
        net = Net()
        n_params = sum(p.numel() for p in net.parameters())
        """
    )
    text = said(
        src.replace("LAYERS", "[nn.Linear(2, 2), nn.Linear(2, 1)]"),
        src.replace("LAYERS", "nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 1)])"),
        [check(kind="value", expr="n_params")],
        setup,
    )
    assert "net.layers is a plain list: its 2 layers are not registered" in text and "use nn.ModuleList" in text


def test_weights_made_then_moved_are_no_longer_leaves():
    # On a GPU machine .to(DEVICE) copies; a dtype conversion copies on every machine.
    setup = "import torch\nx = torch.ones(4, 3)\n"
    text = said(
        "w = torch.randn(3, 2, requires_grad=True).to(torch.float64).float()\n(x @ w).sum().backward()",
        "w = torch.randn(3, 2, requires_grad=True)\n(x @ w).sum().backward()",
        [check(kind="tensor", expr="w.grad", compare=["shape", "values"])],
        setup,
    )
    assert "w was created with requires_grad=True and then moved with .to()" in text or "w is not a leaf" in text


def test_a_detach_that_cuts_the_graph():
    setup = "import torch\nx = torch.tensor([1.0, 2.0], requires_grad=True)\n"
    text = said(
        "h = (x * 3).detach().requires_grad_()\n(h ** 2).sum().backward()",
        "h = x * 3\nh.retain_grad()\n(h ** 2).sum().backward()",
        [check(kind="value", expr="x.grad")],
        setup,
    )
    assert "h is cut off from the graph (it has no grad_fn) where the reference's is not" in text


def test_in_place_change_to_a_saved_tensor():
    setup = "import torch\nx = torch.ones(2, 2)\nw = torch.ones(2, 2, requires_grad=True)\n"
    text = said(
        "h = torch.sigmoid(x @ w)\nh *= 2\nh.sum().backward()",
        "h = torch.sigmoid(x @ w) * 2\nh.sum().backward()",
        [check(kind="value", expr="w.grad")],
        setup,
    )
    assert "an in-place operation" in text and "changed a tensor that autograd saved for backward()" in text


def test_numpy_array_that_silently_shares_memory():
    setup = "import numpy as np\nimport torch\narr = np.linspace(0.0, 1.0, 5)\n"
    text = said(
        "t = torch.from_numpy(arr)\narr[0] = 42.0",
        "t = torch.tensor(arr)\narr[0] = 42.0",
        [check(kind="tensor", expr="t")],
        setup,
    )
    assert "t and the NumPy array arr share memory" in text


def test_reshape_where_a_transpose_was_meant():
    setup = "import torch\na = torch.arange(6.0).reshape(2, 3)\n"
    text = said(
        "t = a.reshape(3, 2)", "t = a.t()", [check(kind="tensor", expr="t", compare=["shape", "values"])], setup
    )
    assert "t holds the right values in the wrong order" in text and "use transpose()/permute()" in text


def test_sum_where_a_mean_was_meant():
    setup = "import torch\nx = torch.tensor([[0.5, 1.25], [2.0, 0.75], [1.5, 3.0], [0.1, 0.3]])\n"
    text = said("m = x.sum(dim=0)", "m = x.mean(dim=0)", [check(kind="tensor", expr="m", rtol=1e-5)], setup)
    assert (
        "m is exactly 4 times the expected value, consistent with a sum where a mean over 4 values was meant, "
        "or a divisor 4 times too small (4 is the size of x's dimension 0)" in text
    )


def test_a_divisor_too_large_is_named_beside_a_mean_for_a_sum():
    """devices-precision/masked-mean divided by the padded length T where the real lengths were
    meant: 1/3 of the expected value, which is no mean where a sum was meant."""
    setup = "import torch\nx = torch.tensor([[0.5, 1.25], [2.0, 0.75], [1.5, 3.0], [0.1, 0.3]])\n"
    text = said("m = x.sum(dim=0) / 4", "m = x.sum(dim=0)", [check(kind="tensor", expr="m", rtol=1e-5)], setup)
    assert "exactly 1/4 of the expected value, consistent with a mean over 4 values" in text, text
    assert "or a divisor 4 times too large" in text, text


def test_save_whole_module_and_load_without_weights_only():
    setup = "import io\nimport torch\nnet = torch.nn.Linear(2, 2)\n"
    solution = (
        "buf = io.BytesIO()\ntorch.save(net.state_dict(), buf)\nbuf.seek(0)\n"
        "state = torch.load(buf, weights_only=True)\nkeys = sorted(state)\n"
    )
    code = (
        "buf = io.BytesIO()\ntorch.save(net, buf)\nbuf.seek(0)\nstate = torch.load(buf, weights_only=False)\nkeys = 1\n"
    )
    text = said(code, solution, [check(kind="value", expr="keys")], setup)
    assert "your code saves the whole module object (torch.save(model, ...))" in text


def test_rng_seed_and_loader_generator():
    setup = "import torch\nfrom torch.utils.data import DataLoader\nds = list(range(12))\n"
    solution = "g = torch.Generator().manual_seed(3)\norder = [int(i) for b in DataLoader(ds, batch_size=4, shuffle=True, generator=g) for i in b]\n"
    code = "order = [int(i) for b in DataLoader(ds, batch_size=4, shuffle=True) for i in b]\n"
    text = said(code, solution, [check(kind="value", expr="order")], setup)
    assert "the reference gives its DataLoader a seeded torch.Generator (generator=g); yours has none" in text


@pytest.mark.slow
def test_the_buggy_set_is_named_without_authored_feedback():
    """benchmarks/feedback.py: every buggy solution against the stripped built-in pack."""
    out = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "feedback.py")], capture_output=True, text=True, timeout=600
    ).stdout
    named, total = map(int, out.strip().splitlines()[-1].split(" named")[0].split(" of "))
    assert total >= 30 and named >= total - 2, out


def test_labels_private_setup_names_and_long_expressions():
    setup = "import torch\n_probe = lambda f: f(torch.ones(2))\n"
    labelled = check(kind="tensor", expr="_probe(double)", label="double of a probe")
    r = verify("def double(x):\n    return x * 3", "def double(x):\n    return x * 2", [labelled], setup=setup)
    assert r["checks"][0]["message"].startswith("double of a probe differs from the expected values")
    bare = check(kind="tensor", expr="_probe(double)")
    r = verify("def double(x):\n    return x * 3", "def double(x):\n    return x * 2", [bare], setup=setup)
    message = r["checks"][0]["message"]
    assert "_probe" not in message and message.startswith("the result checked for double differs")
    long_expr = "torch.linspace(-1, 1, 2 * 784).reshape(2, 1, 28, 28).flatten(1).sum(dim=1) + offset * torch.ones(2)"
    r = verify("offset = 1.0", "offset = 0.5", [check(kind="tensor", expr=long_expr)])
    message = r["checks"][0]["message"]
    assert "the checked expression" not in message and message.startswith("torch.linspace(-1, 1, 2 * 784)")


def test_clipping_after_the_step():
    good = train(
        "opt.zero_grad()\nloss_fn(model(X), y).backward()\n"
        "torch.nn.utils.clip_grad_norm_(model.parameters(), 0.01)\nopt.step()\n"
    )
    bad = train(
        "opt.zero_grad()\nloss_fn(model(X), y).backward()\nopt.step()\n"
        "torch.nn.utils.clip_grad_norm_(model.parameters(), 0.01)\n"
    )
    assert "your code clips the gradients after step()" in said(bad, good, WEIGHT, TRAIN_SETUP)


def test_biased_variance_where_the_unbiased_one_was_meant():
    setup = "import torch\nx = torch.tensor([[1.0, 2.0], [3.0, 5.0], [4.0, 9.0]])\n"
    text = said("v = x.var(dim=0, unbiased=False)", "v = x.var(dim=0)", [check(kind="tensor", expr="v")], setup)
    assert "the reference computes an unbiased variance (divides by n - 1" in text


def test_eval_where_the_reference_trains():
    text = said(
        "model.eval()\nout = model(X)",
        "model.train()\nout = model(X)",
        [check(kind="tensor", expr="out")],
        EVAL_SETUP,
    )
    assert "your code calls model.eval() where the reference stays in training mode" in text
    assert "after it, its dropout is off" in text and "batch norm" not in text, text  # it holds dropout only


def test_eval_is_said_of_the_module_it_was_called_on_and_of_what_that_module_holds():
    """model.body.eval() was "the model.eval()", and its dropout was said to be off in a body
    without one: the module is named by its path, and only what its layers do is said."""
    setup = EVAL_SETUP + "net = nn.Module()\nnet.body = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))\n"
    text = said("net.body.eval()\nout = net.body(X)", "out = net.body(X)", [check(kind="tensor", expr="out")], setup)
    assert "your code calls net.body.eval(), which the reference never calls: after it, its batch norm uses" in text
    assert "dropout" not in text, text


def test_eval_where_the_reference_never_switches_a_mode_does_not_say_it_trains():
    """A reference that computes by hand has no module to keep in training mode: the code's
    eval() is named as what it does, not against a mode the reference never set."""
    text = said(
        "model.eval()\nout = model(X) * 2",
        "out = X @ model[0].weight.T",
        [check(kind="tensor", expr="out")],
        EVAL_SETUP,
    )
    assert "stays in training mode" not in text, text
    assert "your code calls model.eval(), which the reference never calls" in text, text


def test_missing_super_init_is_explained():
    setup = "import torch\nfrom torch import nn\n"
    src = "class Net(nn.Module):\n    def __init__(self):\n        SUPER\n        self.fc = nn.Linear(2, 2)\nnet = Net()\n"
    text = said(
        src.replace("SUPER", "pass"),
        src.replace("SUPER", "super().__init__()"),
        [check(kind="module", expr="net", parameters=6)],
        setup,
    )
    assert "call super().__init__() first in your module's __init__" in text


def test_broadcasting_where_the_reference_pairs_elements():
    spec = check(
        kind="function",
        name="mse",
        args=[{"type": "tensor", "shape": ["n", 1]}, {"type": "tensor", "shape": ["n"]}],
        dims={"n": [2, 4]},
        devices=["cpu"],
    )
    text = said(
        "def mse(p, t):\n    return ((p - t) ** 2).mean()",
        "def mse(p, t):\n    return ((p.squeeze(1) - t) ** 2).mean()",
        [spec],
    )
    assert "your code combines tensors of shapes (2, 1) and (2,) with -, which broadcasts them to (2, 2)" in text


def test_a_state_never_loaded_back():
    setup = "import copy\nimport torch\nmodel = torch.nn.Linear(2, 1)\nbest = copy.deepcopy(model.state_dict())\n"
    text = said(
        "with torch.no_grad():\n    model.weight += 1",
        "with torch.no_grad():\n    model.weight += 1\nmodel.load_state_dict(best)",
        [check(kind="tensor", expr="model.weight")],
        setup,
    )
    assert "the reference calls model.load_state_dict(...); your code never does" in text


def test_dimensions_in_another_order_and_a_fraction_of_the_gradient():
    setup = "import torch\nx = torch.arange(6.0).reshape(2, 3)\nw = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\n"
    text = said("y = x.t().contiguous()", "y = x.clone()", [check(kind="tensor", expr="y")], setup)
    assert "y holds the expected values with its dimensions in another order (shape (3, 2), expected (2, 3))" in text
    text = said("(w ** 2).mean().backward()", "(w ** 2).sum().backward()", [check(kind="value", expr="w.grad")], setup)
    assert (
        "w.grad is exactly 1/3 of the expected value, consistent with a mean over 3 values where their sum was "
        "meant, or a divisor 3 times too large, such as a count that includes what should not count (3 is the "
        "size of w's dimension 0)" in text
    )


def test_forward_called_directly_instead_of_the_module():
    setup = "import torch\nlayer = torch.nn.Linear(2, 2)\nseen = []\nlayer.register_forward_hook(lambda m, i, o: seen.append(1))\n"
    text = said(
        "out = layer.forward(torch.ones(1, 2))",
        "out = layer(torch.ones(1, 2))",
        [check(kind="value", expr="len(seen)")],
        setup,
    )
    assert "your code calls layer.forward(...) directly; call layer(...) instead" in text


def test_a_layer_built_before_the_seed():
    setup = "import torch\n"
    text = said(
        "layer = torch.nn.Linear(3, 2)\ntorch.manual_seed(1)\nw = layer.weight.detach().clone()",
        "torch.manual_seed(1)\nlayer = torch.nn.Linear(3, 2)\nw = layer.weight.detach().clone()",
        [check(kind="tensor", expr="w")],
        setup,
    )
    assert "your code draws random numbers (a layer's initial weights) before it calls torch.manual_seed(...)" in text


def test_the_trace_leaves_torch_as_it_found_it():
    import random

    import numpy as np
    import torch

    from tutor.checks.trace import Tracer

    owners = (torch.Tensor, torch.nn.Module, torch.optim.Optimizer, torch, torch.nn.init, torch.autograd, np.random)
    before = [dict(vars(o)) for o in owners]
    seed = random.seed
    tracer = Tracer().install()
    assert torch.Tensor.backward is not before[0]["backward"]
    tracer.uninstall()
    assert [dict(vars(o)) for o in owners] == before and random.seed == seed


def test_two_traces_removed_in_either_order_leave_torch_as_they_found_it():
    """Both roles in one process (the check library's tests, benchmarks/feedback.py) hold two
    tracers at once. Removed first-in first-out, each used to put back what the other had
    replaced, so a wrapper stayed for good; after a few hundred verifications the chain of
    wrappers made `nn.Linear(3, 2)` in a setup raise RecursionError."""
    import random

    import numpy as np
    import torch

    from tutor.checks.trace import Tracer

    owners = (torch.Tensor, torch.nn.Module, torch.optim.Optimizer, torch, torch.nn.init, torch.autograd, np.random)
    before = [dict(vars(o)) for o in owners]
    seed = random.seed
    for first_out in ("outer", "inner"):
        outer = Tracer().install()
        inner = Tracer().install()
        removed = (outer, inner) if first_out == "outer" else (inner, outer)
        removed[0].uninstall()
        torch.nn.init.normal_(torch.empty(2))  # a call through a wrapper left behind passes through
        removed[1].uninstall()
        assert [dict(vars(o)) for o in owners] == before and random.seed == seed, first_out
    code = "h = model.register_forward_hook(lambda m, i, o: None)\n"
    solution = code + "h.remove()\n"
    setup = "import torch\nmodel = torch.nn.Linear(3, 2)\n"
    for _ in range(3):
        verify(code, solution, [check(kind="value", expr="len(model._forward_hooks)")], setup=setup)
    assert [dict(vars(o)) for o in owners] == before and random.seed == seed


def test_a_missing_backward_is_named_as_the_reference_names_it_and_step_only_with_an_optimizer():
    # No optimizer and no `loss` anywhere: the sentence must not invent either.
    solution = "a = torch.tensor(2.0, requires_grad=True)\nc = a * 3\nc.backward()\n"
    code = "a = torch.tensor(2.0, requires_grad=True)\nc = a * 3\na.grad = torch.tensor(5.0)\n"
    r = verify(code, solution, [check(kind="tensor", expr="a", compare=["values", "grad"])])
    assert not r["passed"]
    said = " ".join(r["mistakes"])
    assert "the reference calls c.backward() once; your code never calls it" in said, r
    assert "loss" not in said and "step()" not in said, said


def test_the_grad_mode_rule_says_what_results_are_only_where_that_failed():
    setup = (
        "import torch\nfrom torch import nn\nW = torch.tensor([[1.0, 2.0], [3.0, 4.0]])\n"
        "layer = nn.Linear(2, 2)\n_held = [layer.weight]\n"
        "def held(layer):\n    return layer.weight is _held[0]\n"
    )
    solution = "with torch.no_grad():\n    layer.weight.copy_(W)\n"
    # New parameters, no graph anywhere: what failed is that the layer holds other ones.
    r = verify(
        "layer.weight = nn.Parameter(W.clone())\n", solution, [check(kind="value", expr="held(layer)")], setup=setup
    )
    assert not r["passed"]
    assert not any("keep a graph" in m for m in r["mistakes"]), r["mistakes"]
    # An update recorded by autograd, and a check about it: then the sentence is established.
    leaf = "import torch\nw = torch.ones(3, requires_grad=True)\nw.grad = torch.ones(3)\n"
    r = verify(
        "v = w - 0.1 * w.grad\n",
        "with torch.no_grad():\n    v = w - 0.1 * w.grad\n",
        [check(kind="tensor", expr="v", compare=["values", "requires_grad"])],
        setup=leaf,
    )
    assert not r["passed"]
    assert any("keep a graph" in m for m in r["mistakes"]), r["mistakes"]


def test_a_copy_of_a_numpy_array_is_no_cause_where_its_values_are_right():
    # The reference wraps W (torch.from_numpy), the code copies it (torch.tensor): nothing
    # wrote W afterwards, so the values agree, and "it should share memory" is no cause of the
    # wrong db that fails here.
    setup = "import numpy as np\nimport torch\nW = np.ones((2, 2))\nG = np.full((4, 2), 0.5)\n"
    solution = "W_t = torch.from_numpy(W).requires_grad_()\ndb = G.sum(axis=0)\n"
    code = "W_t = torch.tensor(W, requires_grad=True)\ndb = G.mean(axis=0)\n"
    checks = [check(kind="tensor", expr="W_t"), check(kind="value", expr="db.tolist()")]
    r = verify(code, solution, checks, setup=setup)
    assert not r["passed"]
    assert not any("share memory" in m for m in r["mistakes"]), r["mistakes"]
