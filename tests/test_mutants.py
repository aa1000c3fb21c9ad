"""The mutator (tutor/grading/mutants.py) on small sources: each operator, stable ids, valid syntax."""

from __future__ import annotations

import ast

from hypothesis import given, settings
from hypothesis import strategies as st

from tutor.grading.mutants import OPERATORS, literal_source, literal_targets, mutants, typed_in_targets

TRAIN = """\
import torch
for xb, yb in batches:
    opt.zero_grad()
    loss = loss_fn(model(xb), yb)
    loss.backward()
    opt.step()
model.eval()
"""


def diffs(source: str, operator: str, literals: dict[str, str] | None = None) -> list[str]:
    return [m.diff for m in mutants(source, literals) if m.operator == operator]


def test_drop_removes_one_statement_or_one_call_of_a_chain():
    found = diffs(TRAIN, "drop")
    for call in ("opt.zero_grad()", "loss.backward()", "opt.step()"):
        assert f"-    {call}\n+    pass" in found
    assert "-model.eval()\n+pass" in found
    chained = diffs("out = x.detach().cpu().clone().numpy()\nbuf.seek(0)\ny = x.to(DEVICE)\n", "drop")
    assert "-out = x.detach().cpu().clone().numpy()\n+out = x.cpu().clone().numpy()" in chained
    assert "-out = x.detach().cpu().clone().numpy()\n+out = x.detach().clone().numpy()" in chained
    assert "-out = x.detach().cpu().clone().numpy()\n+out = x.detach().cpu().numpy()" in chained
    assert "-buf.seek(0)\n+pass" in chained
    assert "-y = x.to(DEVICE)\n+y = x" in chained
    assert not [d for d in diffs("print(x)\n", "drop")]  # dropping a print changes nothing checked


def test_in_place_and_back():
    found = diffs("x.add_(1)\ny = a.mul(b)\ntotal += w\nacc = acc + g\n", "in-place")
    assert "-x.add_(1)\n+x.add(1)" in found
    assert "-y = a.mul(b)\n+y = a.mul_(b)" in found
    assert "-total += w\n+total = total + w" in found
    assert "-acc = acc + g\n+acc += g" in found
    # in place on a temporary nobody else holds changes nothing
    assert diffs("y = layer(x).pow(2)\n", "in-place") == []
    # a module function's f_ and f are one function under two names, not an in-place twin
    assert diffs("import torch\ntorch.nn.init.zeros_(w)\n", "in-place") == []


def test_swap_names_of_one_role():
    found = diffs("loss = loss_fn(logits, targets)\nok = a < b\npair = (rows, cols)\n", "swap-names")
    assert found == [
        "-loss = loss_fn(logits, targets)\n+loss = loss_fn(targets, logits)",
        "-ok = a < b\n+ok = b < a",
        "-pair = (rows, cols)\n+pair = (cols, rows)",
    ]
    # swapped operands of + * == != mean the same: no mutant
    assert diffs("c = a * b + b * a\nok = p == q\n", "swap-names") == []
    # modules, builtins and DEVICE are not variables
    assert diffs("import torch\ny = torch.add(torch, DEVICE)\nz = max(len, x)\n", "swap-names") == []


def test_mean_sum_and_reduction():
    found = diffs("m = x.mean()\ns = torch.sum(x)\nf = nn.MSELoss(reduction='mean')\n", "mean-sum")
    assert found == [
        "-m = x.mean()\n+m = x.sum()",
        "-s = torch.sum(x)\n+s = torch.mean(x)",
        "-f = nn.MSELoss(reduction='mean')\n+f = nn.MSELoss(reduction='sum')",
    ]


def test_another_dim():
    found = diffs("a = x.sum(dim=1)\nb = x.softmax(-1)\nc = torch.cat([p, q], 0)\nd = x.mean(0)\n", "dim")
    assert found == [
        "-a = x.sum(dim=1)\n+a = x.sum(dim=0)",
        "-b = x.softmax(-1)\n+b = x.softmax(0)",
        "-c = torch.cat([p, q], 0)\n+c = torch.cat([p, q], 1)",
        "-d = x.mean(0)\n+d = x.mean(1)",
    ]


def test_off_by_one_moves_a_boundary_of_counts_not_of_measured_values():
    source = (
        "for i in range(len(xs)):\n"
        "    if i < len(xs) - 1:\n"
        "        w = xs[i : i + k]\n"
        "mask = torch.arange(T) < lengths[:, None]\n"
        "for epoch in range(1, 9):\n"
        "    if loss < best and acc > 0:\n"
        "        head = xs[:-1]\n"
    )
    assert diffs(source, "off-by-one") == [
        "-for i in range(len(xs)):\n+for i in range(len(xs) - 1):",
        "-    if i < len(xs) - 1:\n+    if i <= len(xs) - 1:",
        "-        w = xs[i : i + k]\n+        w = xs[i : i + k - 1]",
        "-mask = torch.arange(T) < lengths[:, None]\n+mask = torch.arange(T) <= lengths[:, None]",
        "-for epoch in range(1, 9):\n+for epoch in range(1, 8):",
        "-        head = xs[:-1]\n+        head = xs[:-2]",
    ]  # `loss < best` and `acc > 0` compare measured values: a tie is no bug anyone makes


def test_weights_only_gains_a_fallback_that_unpickles_anything():
    source = "def load(buf):\n    state = torch.load(buf, weights_only=True)\n    return state\n"
    (mutant,) = [m for m in mutants(source) if m.operator == "weights-only"]
    assert mutant.source == (
        "def load(buf):\n"
        "    try:\n"
        "        state = torch.load(buf, weights_only=True)\n"
        "    except Exception:\n"
        "        getattr(buf, 'seek', lambda _: None)(0)\n"
        "        state = torch.load(buf, weights_only=False)\n"
        "    return state\n"
    )
    assert mutant.line == 2


def test_literal_replaces_a_final_value_computed_from_the_data():
    source = "import torch\nh = x @ w\ny = h.relu()\n"
    names = literal_targets(source, "x = torch.randn(2, 2)\nw = torch.randn(2, 2)\n", '{"expr": "y"}')
    assert names == ["y"]  # h is not checked
    assert literal_targets("y = torch.zeros(2)\n", "x = 1\n", "y") == []  # depends on no data: a literal already
    # written again in a loop: the first assignment is not the final value
    assert literal_targets("best = None\nfor v in x:\n    best = v\n", "x = [1, 2]\n", "best") == []
    text = literal_source(
        {"kind": "tensor", "dtype": "torch.float32", "values": [[0.5, 0.0]], "requires_grad": False}, on_device=True
    )
    assert text == "torch.tensor([[0.5, 0.0]], dtype=torch.float32, device=DEVICE)"
    assert literal_source({"kind": "number", "value": 3}) == "3"
    for bad in ({"kind": "number", "value": float("nan")}, {"kind": "tensor", "dtype": "torch.x;y", "values": []}):
        assert literal_source(bad) is None
    (mutant,) = [m for m in mutants(source, {"y": text}) if m.operator == "literal"]
    assert mutant.diff == "-y = h.relu()\n+y = torch.tensor([[0.5, 0.0]], dtype=torch.float32, device=DEVICE)"


def test_typed_in_replaces_the_whole_solution_by_the_checked_values():
    # A hook fills `shapes`: no final assignment for the literal operator to replace, so only
    # a typed-in answer shows whether the checks would take the values copied from the prompt.
    source = (
        "import torch\n"
        "def hook(module, args, output):\n"
        "    shapes.append(output.shape)\n"
        "handle = model.register_forward_hook(hook)\n"
        "logits = model(x)\n"
    )
    setup = "import torch\nmodel = torch.nn.Linear(3, 5)\nx = torch.randn(4, 3)\nshapes = []\n"
    checked = '[{"expr": "shapes"}, {"expr": "logits.shape"}]'
    assert literal_targets(source, setup, checked) == ["logits"]
    assert typed_in_targets(source, setup, checked) == ["shapes", "logits"]  # `hook` is defined, not checked
    assert typed_in_targets("y = torch.zeros(2)\n", "x = 1\n", "y") == []  # depends on no data
    shapes = {
        "kind": "sequence",
        "type": "list",
        "items": [
            {
                "kind": "sequence",
                "type": "size",
                "items": [{"kind": "number", "value": 4}, {"kind": "number", "value": 5}],
            }
        ],
    }
    assert literal_source(shapes) == "[torch.Size([4, 5])]"
    assert literal_source({"kind": "sequence", "type": "tuple", "items": [{"kind": "number", "value": 1}]}) == "(1,)"
    for bad in (
        {"kind": "sequence", "type": "set", "items": []},
        {"kind": "sequence", "type": "size", "items": [{"kind": "number", "value": 1.5}]},
        {"kind": "sequence", "type": "list", "items": [{"kind": "tensor", "dtype": "torch.x;y", "values": []}]},
    ):
        assert literal_source(bad) is None
    (mutant,) = [m for m in mutants(source, {}, {"shapes": "[torch.Size([4, 5])]"}) if m.operator == "typed-in"]
    assert mutant.source == "import torch\nshapes = [torch.Size([4, 5])]\n"
    assert mutant.line == 1 and "-handle = model.register_forward_hook(hook)" in mutant.diff
    # the same text as a literal mutant: one mutant, not two
    same = mutants("import torch\ny = x.relu()\n", {"y": "torch.tensor([1.0])"}, {"y": "torch.tensor([1.0])"})
    assert [m.operator for m in same if m.operator in ("literal", "typed-in")] == ["literal"]


def test_ids_are_stable_and_follow_the_text_not_the_line():
    first = {m.id: m.diff for m in mutants(TRAIN)}
    assert first == {m.id: m.diff for m in mutants(TRAIN)}
    moved = {m.id: m.diff for m in mutants("# a comment above moves every line\n\n" + TRAIN)}
    assert moved == first
    assert all(m.id.split("-")[0] in {op.split("-")[0] for op in OPERATORS} for m in mutants(TRAIN))
    # the same text twice: two mutants, two ids
    twice = [m for m in mutants("opt.step()\nopt.step()\n") if m.operator == "drop"]
    assert len({m.id for m in twice}) == 2


def test_mutants_differ_from_the_reference_and_from_each_other():
    source = "x.add_(1)\nx.add_(1)\n"
    found = mutants(source)
    shapes = [ast.dump(ast.parse(m.source)) for m in found]
    assert ast.dump(ast.parse(source)) not in shapes and len(set(shapes)) == len(shapes)
    assert mutants("def broken(:\n") == []


_LINES = st.sampled_from(
    [
        "opt.zero_grad()",
        "loss = loss_fn(out, y).mean()",
        "loss.backward()",
        "x += y",
        "z = z * w",
        "t = a.to(DEVICE).detach().clone()",
        "s = torch.cat([a, b], dim=-1).sum(1)",
        "state = torch.load(buf, weights_only=True)",
        "for i in range(n):",
        "if a < b:",
        "with torch.no_grad():",
        "def f(a, b):",
    ]
)


@st.composite
def programs(draw) -> str:
    lines, depth = [], 0
    for line in draw(st.lists(_LINES, min_size=1, max_size=10)):
        lines.append("    " * depth + line)
        if line.endswith(":"):
            depth += 1
        elif depth and draw(st.booleans()):
            depth -= 1
    if lines[-1].endswith(":"):
        lines.append("    " * depth + "pass")
    return "\n".join(lines) + "\n"


@settings(max_examples=150, deadline=None)
@given(programs())
def test_every_mutant_parses(source: str):
    for mutant in mutants(source):
        ast.parse(mutant.source)
        assert mutant.source != source and mutant.diff.startswith("-")
