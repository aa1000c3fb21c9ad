"""module and state_dict checks: parameter counts, registration (buffers, ModuleList),
training mode, and the save / load round trip."""

from itertools import pairwise

import torch
from test_checks_support import check, only, verify
from torch import nn

MLP = """
import torch
from torch import nn
import pytest

# Every test here verifies in a real kernel.
pytestmark = pytest.mark.slow

class MLP(nn.Module):
    def __init__(self, sizes=(784, 128, 64, 10)):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes, sizes[1:]))
        self.register_buffer("mean", torch.zeros(sizes[0]))

    def forward(self, x):
        x = x - self.mean
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = torch.relu(x)
        return x

model = MLP()
"""

PLAIN_LIST = MLP.replace(
    "nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes, sizes[1:]))",
    "[nn.Linear(a, b) for a, b in zip(sizes, sizes[1:])]",
)
PLAIN_TENSOR = MLP.replace('self.register_buffer("mean", torch.zeros(sizes[0]))', "self.mean = torch.zeros(sizes[0])")


def test_mlp_784_128_64_10_has_109386_parameters():
    sizes = (784, 128, 64, 10)
    assert sum(a * b + b for a, b in pairwise(sizes)) == 109386
    c = check(kind="module", expr="model", parameters=109386, trainable=109386)
    r = verify(MLP, MLP, [c])
    assert r["passed"], r
    assert only(r)["message"] == "✓ model has 109,386 parameters, 109,386 trainable and every tensor registered"
    small = MLP.replace("model = MLP()", "model = MLP((784, 100, 10))")
    r = verify(small, MLP, [c])
    assert "model has 79,510 parameters, expected 109,386" in only(r)["message"]


def test_frozen_parameters_change_the_trainable_count():
    frozen = MLP + "model.layers[0].requires_grad_(False)\n"
    r = verify(frozen, MLP, [check(kind="module", expr="model", trainable=109386)])
    assert only(r)["message"] == (
        "model has 8,906 trainable parameters (requires_grad=True), expected 109,386: "
        "some parameters are frozen (requires_grad is False)"
    )


def test_buffers_are_in_state_dict_but_not_parameters():
    ns = {}
    exec(MLP, ns)
    model = ns["model"]
    assert "mean" in model.state_dict() and "mean" not in dict(model.named_parameters())
    names = [f"layers.{i}.{p}" for i in range(3) for p in ("weight", "bias")]
    c = check(kind="module", expr="model", parameter_names=names, buffer_names=["mean"])
    assert verify(MLP, MLP, [c])["passed"]
    keys = check(kind="state_dict", expr="model", factory="MLP()", probe="torch.randn(4, 784)", keys=["mean", *names])
    assert verify(MLP, MLP, [keys])["passed"]
    r = verify(MLP, MLP, [check(kind="module", expr="model", parameter_names=[*names, "mean"], buffer_names=[])])
    msg = only(r)["message"]
    assert "model is missing the parameters mean" in msg and "model has unexpected buffers mean" in msg


def test_plain_list_of_layers_earns_the_modulelist_message():
    r = verify(PLAIN_LIST, MLP, [check(kind="module", expr="model", parameters=109386)])
    expected = (
        "model.layers is a plain list: its 3 layers are not registered "
        "(0 of their 109,386 parameters are counted); use nn.ModuleList"
    )
    msg = only(r)["message"]
    assert msg.startswith("model has 0 parameters, expected 109,386: ") and expected in msg
    assert r["mistakes"] == []  # the check already says it: one cause, said once
    names = [f"layers.{i}.{p}" for i in range(3) for p in ("weight", "bias")]
    r = verify(PLAIN_LIST, MLP, [check(kind="module", expr="model", parameters=109386, parameter_names=names)])
    msg = only(r)["message"]
    assert msg.count("is a plain list") == 1 and "layers.0.weight" not in msg  # explained once, not per name
    # Registered as well, under other names: "not registered" would be false.
    also = PLAIN_LIST.replace(
        "model = ",
        "class Named(MLP):\n    def __init__(self):\n        super().__init__()\n"
        "        for i, layer in enumerate(self.layers):\n            self.add_module(f'layer{i}', layer)\n\n\nmodel = ",
        1,
    ).replace("MLP()\n", "Named()\n", 1)
    r = verify(also, MLP, [check(kind="module", expr="model", parameters=109386, parameter_names=names)])
    msg = only(r)["message"]
    assert "not registered" not in msg and "registered only under other names" in msg, msg


def test_plain_tensor_attribute_earns_the_register_buffer_message():
    plain = "model.mean is a plain tensor attribute: it is not in state_dict and does not move with .to(); use register_buffer"
    r = verify(PLAIN_TENSOR, MLP, [check(kind="module", expr="model")])
    assert only(r)["message"].startswith(plain)
    r = verify(PLAIN_TENSOR, MLP, [check(kind="module", expr="model", no_plain_tensors=False)])
    assert r["passed"]
    names = [f"layers.{i}.{p}" for i in range(3) for p in ("weight", "bias")]
    sd = check(kind="state_dict", expr="model", factory="MLP()", probe="torch.randn(2, 784)", keys=["mean", *names])
    r = verify(PLAIN_TENSOR, MLP, [sd])
    assert only(r)["message"].startswith(plain)
    assert not any(m.startswith(plain) for m in r["mistakes"])  # said by the check, not repeated


def test_state_dict_round_trip_restores_the_same_outputs():
    trained = MLP + "with torch.no_grad():\n    model.layers[0].weight.mul_(3)\nmodel.mean.fill_(0.5)\nmodel.train()\n"
    sd = check(kind="state_dict", expr="model", factory="MLP()", probe="torch.randn(4, 784)")
    r = verify(trained, trained, [sd, check(kind="module", expr="model", training=True)])
    assert r["passed"], r  # the round trip put the model in eval mode and back
    assert (
        r["checks"][0]["message"] == "✓ model restored from its state_dict (7 keys) gives the same output on the probe"
    )
    # a plain tensor attribute set after construction is lost by the round trip
    lost = PLAIN_TENSOR + "model.mean = torch.full((784,), 0.5)\n"
    r = verify(lost, trained, [sd])
    msg = only(r)["message"]
    assert msg.startswith("the restored model's output differs from the original's on the probe: ")
    assert "model.mean is a plain tensor attribute" in msg


def test_state_dict_that_does_not_load_into_the_factory():
    sd = check(kind="state_dict", expr="model", factory="MLP((784, 100, 10))", probe="torch.randn(4, 784)")
    r = verify(MLP, MLP, [sd])
    assert only(r)["message"].startswith(
        "the saved state_dict does not load into a fresh MLP((784, 100, 10)): RuntimeError"
    )


def test_training_flag_and_wrong_objects():
    c = check(kind="module", expr="model", training=False)
    r = verify(MLP, MLP + "model.eval()\n", [c])
    assert only(r)["message"] == "model.training is True, expected False: call model.eval()"
    assert verify(MLP + "model.eval()\n", MLP, [c])["passed"]
    r = verify(MLP.replace("model = MLP()", "model = MLP"), MLP, [c])
    assert only(r)["message"] == "model is the class MLP, not an instance: create one with MLP(...)"
    r = verify("model = [1, 2]", MLP, [c])
    assert only(r)["message"] == "model is a list, expected an nn.Module"


def test_missing_attribute_names_what_the_model_lacks():
    r = verify(MLP, MLP, [check(kind="value", expr="model.fc1.weight.shape", expected="(128, 784)")])
    assert only(r)["message"] == "model has no attribute 'fc1'"
    assert only(r)["passed"] is False


def test_modules_from_torch_itself_are_not_flagged():
    code = "import torch\nmodel = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.BatchNorm2d(2), torch.nn.MultiheadAttention(4, 2))\n"
    assert verify(code, code, [check(kind="module", expr="model")])["passed"]
    assert isinstance(nn.BatchNorm2d(2).running_mean, torch.Tensor)
