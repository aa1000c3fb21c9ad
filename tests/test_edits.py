"""A statement of the learner's that is one of the reference's with one small edit
(tutor/checks/edits.py): a reduction swapped, operands or arguments in the other order,
something off by one, another dim. Said only where the two statements differ at that one
place; never for an order that cannot matter, a sum divided afterwards, or a statement the
reference also holds as written. The last tests run real verifications."""

from __future__ import annotations

import pytest
import torch

from tutor.checks import edits
from tutor.checks.edits import one_edit, one_extra, one_missing, one_moved, one_place

WHERE = "differs from the reference's matching statement only in"


def said(code: str, solution: str, values=None) -> str | None:
    found = one_edit(code, solution, values)
    assert len(found) <= 1
    return found[0][0] if found else None


def test_a_sum_where_the_reference_takes_a_mean_is_named_with_its_line():
    ref = "w = torch.zeros(3)\nloss = ((x @ w - y) ** 2).mean()\n"
    code = "w = torch.zeros(3)\nloss = ((x @ w - y) ** 2).sum()\n"
    assert said(code, ref) == (
        f"line 2 of your code {WHERE} taking .sum() where it takes .mean(): a sum over n values is n times their "
        "mean, and so is every gradient that flows through it"
    )
    assert one_edit(code, ref)[0][1] == "edit:reduction"
    # and the other way, in a NumPy call
    assert "taking .mean() where it takes .sum()" in said("P = E / E.mean(axis=1)\n", "P = E / E.sum(axis=1)\n")
    # a count of matches, or a number (.item()): no gradient flows through it, none is spoken of
    for code, ref in (
        ("acc = (p == y).float().sum()\n", "acc = (p == y).float().mean()\n"),
        ("acc = p.sum().item()\n", "acc = p.mean().item()\n"),
    ):
        text = said(code, ref)
        assert text is not None and text.endswith("a sum over n values is n times their mean"), text


def test_a_return_or_an_assignment_with_two_items_in_each_other_s_place_is_named():
    text = said("def step(p, m, v):\n    return m, p, v\n", "def step(p, m, v):\n    return p, m, v\n")
    assert text == f"line 2 of your code {WHERE} (m, p, v) where it has (p, m, v): the same items in the other order"
    assert "(epoch, loss) where it has (loss, epoch)" in said("best, at = epoch, loss\n", "best, at = loss, epoch\n")


def test_another_of_the_reference_s_values_in_its_place_is_named():
    ref = "a = x.var(dim=0, unbiased=False)\nb = x.var(dim=0, unbiased=True)\nrv = 0.1 * b\n"
    code = "a = x.var(dim=0, unbiased=False)\nrv = 0.1 * a\n"
    assert said(code, ref, {"x": torch.ones(3)}) == (
        f"line 2 of your code {WHERE} using a where it uses b (your a is the reference's too: "
        "a = x.var(dim=0, unbiased=False))"
    )
    # a name of the setup's in another's place
    setup = {"x_train": torch.ones(2), "x_val": torch.zeros(2)}
    assert "using x_train where it uses x_val (your x_train is the setup's)" in said(
        "acc = evaluate(model, x_train)\n", "acc = evaluate(model, x_val)\n", setup
    )
    # a name of the learner's own may hold what the reference's holds: no edit
    assert said("v = x.var(dim=0)\nrv = 0.1 * v\n", "b = x.var(dim=0)\nrv = 0.1 * b\n", {"x": 1}) is None
    # bound otherwise in the learner's code than in the reference's
    assert said("a = x.var(dim=0, unbiased=True)\nrv = 0.1 * a\n", ref, {"x": 1}) is None
    # a module or a function under another name may be the same one
    import torch.nn.functional as F

    modules = {"F": F, "torch": torch, "relu": torch.relu, "act": torch.relu, "x": torch.ones(2)}
    assert said("y = F.relu(x)\n", "y = torch.relu(x)\n", modules) is None
    assert said("y = act(x)\n", "y = relu(x)\n", modules) is None
    # a name the learner's code binds another way too (a loop's target, a parameter)
    assert said("for a in xs:\n    pass\nrv = 0.1 * a\n", "rv = 0.1 * b\n", {"a": 1, "b": 2}) is None


def test_operands_and_arguments_in_the_other_order_are_named():
    assert said("h = torch.sigmoid(w @ x)\n", "h = torch.sigmoid(x @ w)\n") == (
        f"line 1 of your code {WHERE} w @ x where it has x @ w: the same operands in the other order"
    )
    assert "t ** beta1 where it has beta1 ** t" in said(
        "m_hat = m / (1 - t ** beta1)\n", "m_hat = m / (1 - beta1 ** t)\n"
    )
    assert "best < loss where it has loss < best: the same operands" in said(
        "if best < loss:\n    best = loss\n", "if loss < best:\n    best = loss\n"
    )
    text = said("for x, y in zip(ys, xs):\n    pass\n", "for x, y in zip(xs, ys):\n    pass\n")
    assert "zip(ys, xs) where it has zip(xs, ys): the same arguments in the other order" in text


@pytest.mark.parametrize(
    ("code", "solution"),
    [
        # commutative operations and symmetric functions: the order cannot matter
        ("z = b + a\n", "z = a + b\n"),
        ("z = b * a\n", "z = a * b\n"),
        ("ok = b == a\n", "ok = a == b\n"),
        ("z = torch.maximum(b, a)\n", "z = torch.maximum(a, b)\n"),
        ("loss = F.mse_loss(y, pred)\n", "loss = F.mse_loss(pred, y)\n"),
        ("t = x.transpose(1, 0)\n", "t = x.transpose(0, 1)\n"),
        # a difference taken through an even function
        ("loss = ((y - pred) ** 2).mean()\n", "loss = ((pred - y) ** 2).mean()\n"),
        ("loss = (y - pred).pow(2).mean()\n", "loss = (pred - y).pow(2).mean()\n"),
        ("err = (b - a).abs().max()\n", "err = (a - b).abs().max()\n"),
        ("err = torch.norm(b - a)\n", "err = torch.norm(a - b)\n"),
        # swapped in the loop's target as well: the same pairs
        ("for y, x in zip(ys, xs):\n    pass\n", "for x, y in zip(xs, ys):\n    pass\n"),
        # a loop's target and iterable, or a with's managers, crossed: not two operands of one operation
        ("for x in y:\n    pass\n", "for y in x:\n    pass\n"),
        ("with b, a:\n    pass\n", "with a, b:\n    pass\n"),
        # keywords in another order are the same call
        ("f(b=2, a=1)\n", "f(a=1, b=2)\n"),
        # items read as a collection whose order cannot matter
        ("ok = isinstance(x, (float, int))\n", "ok = isinstance(x, (int, float))\n"),
        ("ok = mode in ('eval', 'train')\n", "ok = mode in ('train', 'eval')\n"),
        # a sum divided afterwards is a mean written in two steps
        ("loss = (d ** 2).sum()\nloss = loss / n\n", "loss = (d ** 2).mean()\n"),
        ("loss = (d ** 2).sum()\nloss /= n\n", "loss = (d ** 2).mean()\n"),
        # two edits in one statement, or a statement written differently
        ("z = (b - a) / 3\n", "z = (a - b) / 2\n"),
        ("loss = d.pow(2).sum() / len(d)\n", "loss = d.pow(2).mean()\n"),
        # -1 and 1 may be the same dim, and another statement differs too: it may be the cause
        ("p = s.softmax(dim=1)\nq = p.exp()\n", "p = s.softmax(dim=-1)\nq = p.log()\n"),
        # ... or the function's parameters do
        (
            "def f(s, t=1):\n    return s.softmax(dim=1) * t\n",
            "def f(s, t=2):\n    return s.softmax(dim=-1) * t\n",
        ),
        # the same statement as the reference's
        ("loss = (d ** 2).mean()\n", "loss = (d ** 2).mean()\n"),
        # a float constant is no count
        ("lr = 0.2\n", "lr = 0.1\n"),
    ],
)
def test_a_difference_that_need_not_change_anything_is_not_named(code, solution):
    assert said(code, solution) is None


def test_the_reference_s_statement_written_as_it_is_elsewhere_is_no_edit():
    # the learner's code holds the reference's statement too: the other line is no replacement of it
    ref = "a = x @ w\n"
    assert said("a = x @ w\nb = w @ x\n", ref) is None


def test_a_one_element_tensor_summed_is_its_mean():
    values = {"loss": torch.tensor(2.0)}
    assert said("total = loss.sum()\n", "total = loss.mean()\n", values) is None
    assert said("total = loss.sum()\n", "total = loss.mean()\n", {"loss": torch.ones(3)}) is not None


def test_off_by_one_is_quoted_with_the_call_or_index_it_is_in():
    assert said("for _ in range(steps - 1):\n    step()\n", "for _ in range(steps):\n    step()\n") == (
        f"line 1 of your code {WHERE} range(steps - 1) where it has range(steps): off by one"
    )
    assert "sizes[:-2] where it has sizes[:-1]: off by one" in said(
        "pairs = zip(sizes[:-2], sizes[1:])\n", ("pairs = zip(sizes[:-1], sizes[1:])\n")
    )
    assert "range(29) where it has range(30): off by one" in said(
        "for e in range(29):\n    pass\n", ("for e in range(30):\n    pass\n")
    )
    assert "i <= n - 1 where it has i < n - 1: off by one" in said(
        "if i <= n - 1:\n    pass\n", "if i < n - 1:\n    pass\n"
    )
    # a count that differs by more than one is another number, not an off-by-one
    assert said("for e in range(20):\n    pass\n", "for e in range(30):\n    pass\n") is None


def test_a_constant_of_arithmetic_is_another_constant_not_an_off_by_one():
    # h * 3 for h * 2: the numbers are one apart, but nothing is counted or bounded there
    assert said("y = h * 3\n", "y = h * 2\n") == (
        f"line 1 of your code {WHERE} h * 3 where it has h * 2: the constant 3 where the reference's is 2"
    )
    assert one_edit("y = h * 3\n", "y = h * 2\n")[0][1] == "edit:constant"
    assert "x ** 3 where it has x ** 2: the constant 3" in said("y = x ** 3\n", "y = x ** 2\n")
    assert "x.pow(3) where it has x.pow(2): the constant 3" in said("y = x.pow(3)\n", "y = x.pow(2)\n")
    assert "x.clamp(min=1) where it has x.clamp(min=0): the constant 1" in said(
        "y = x.clamp(min=1)\n", "y = x.clamp(min=0)\n"
    )
    # further apart too: still the constant, never "off by one"
    assert "the constant 5 where the reference's is 2" in said("y = h * 5\n", "y = h * 2\n")
    assert "-2 * g where it has -1 * g: the constant -2 where the reference's is -1" in said(
        "d = -2 * g\n", "d = -1 * g\n"
    )
    # counts, positions and sizes one apart stay off by one
    assert said("t = torch.zeros(4)\n", "t = torch.zeros(3)\n").endswith("off by one")
    assert said("v = x[:, 3]\n", "v = x[:, 2]\n").endswith("off by one")


def test_dims_counted_from_either_end_are_named_where_nothing_else_differs():
    # 0 and -1 are one dim of a 1-D tensor only; where the programs differ in nothing else,
    # the failure that asked for this diagnosis comes from that argument
    assert "along dim 0, the reference's along dim -1" in said("p = s.softmax(dim=0)\n", "p = s.softmax(dim=-1)\n")
    code = "import math\n\ndef attention(q, k, v):\n    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])\n"
    text = said(code + "    return s.softmax(dim=0) @ v\n", code + "    return s.softmax(dim=-1) @ v\n")
    assert text.startswith("line 5 of your code") and "along dim 0, the reference's along dim -1" in text


def test_a_sign_or_an_inverse_operation_is_named_where_the_rest_is_the_same():
    assert said("d = w * x + b + Engine(y)\n", "d = w * x + b + Engine(-y)\n") == (
        f"line 1 of your code {WHERE} Engine(y) where it has Engine(-y): the opposite sign"
    )
    assert "w + lr * g where it has w - lr * g: the opposite sign" in said("w = w + lr * g\n", "w = w - lr * g\n")
    assert "f(x / s) where it has f(x * s): the inverse operation" in said("out = f(x / s)\n", "out = f(x * s)\n")
    # the whole value negated and then squared, or taken absolute: no difference
    assert said("loss = (-d) ** 2\n", "loss = d ** 2\n") is None
    assert said("loss = abs(-d)\n", "loss = abs(d)\n") is None
    # another operator that is not the inverse (a power for a product) is another edit
    assert said("y = a ** b\n", "y = a * b\n") is None


def test_another_dim_is_named_as_a_dim_not_as_off_by_one():
    text = said("m = (x * mask).sum(dim=0)\n", "m = (x * mask).sum(dim=1)\n")
    assert text == (
        f"line 1 of your code {WHERE} (x * mask).sum(dim=0) where it has (x * mask).sum(dim=1): your code works "
        "along dim 0, the reference's along dim 1"
    )
    assert "along dim -2, the reference's along dim -1" in said("p = s.softmax(dim=-2)\n", "p = s.softmax(dim=-1)\n")
    assert "x.flatten(0) where it has x.flatten(1)" in said("h = x.flatten(0)\n", "h = x.flatten(1)\n")


def test_a_value_computed_in_place_where_the_reference_makes_a_new_one_is_named():
    ref = "def step(p, g, lr):\n    p = p - lr * g\n    return p\n"
    code = "def step(p, g, lr):\n    p -= lr * g\n    return p\n"
    assert said(code, ref) == (
        f"line 2 of your code {WHERE} p -= lr * g where it has p = p - lr * g: it writes into what p holds (in "
        "place, where that is a tensor, an array or a list), where the reference's makes a new one: whatever else "
        "holds it (the caller's argument, a module's parameter) changes too"
    )
    assert one_edit(code, ref)[0][1] == "edit:in-place"
    # the other way: a module's weight replaced by a new tensor where the reference updates it
    text = said("self.w = self.w - lr * g\n", "self.w -= lr * g\n")
    assert "it makes a new object where the reference's writes into what self.w holds (in place" in text
    # a parameter of the innermost function around the statement
    inner = "def make(lr):\n    def step(p, g):\n        p {} lr * g\n        return p\n    return step\n"
    assert said(inner.format("-="), inner.format("= p -")).startswith(f"line 3 of your code {WHERE} p -= lr * g")
    # the setup's tensor, at the top level
    assert said("w -= 0.1 * w.grad\n", "w = w - 0.1 * w.grad\n", {"w": torch.ones(2)}) is not None


@pytest.mark.parametrize(
    ("code", "ref", "values"),
    [
        # a local of the function's own: nothing outside it holds the object
        (
            "def f(x):\n    t = x * 2\n    t += 1\n    return t\n",
            "def f(x):\n    t = x * 2\n    t = t + 1\n    return t\n",
            {},
        ),
        # a number of the setup's, or a count kept on an object: in place and a new one are the same
        ("total += 1.5\n", "total = total + 1.5\n", {"total": 0.0}),
        ("def step(self):\n    self.steps += 1\n", "def step(self):\n    self.steps = self.steps + 1\n", {}),
        # another operator, or another value
        ("def f(p):\n    p *= 2\n", "def f(p):\n    p = p + 2\n", {}),
        ("def f(p):\n    p += 3\n", "def f(p):\n    p = p + 2\n", {}),
        # an item is written in place either way
        ("def f(p):\n    p[0] += 1\n", "def f(p):\n    p[0] = p[0] + 1\n", {}),
    ],
)
def test_in_place_is_not_said_where_it_cannot_matter_or_is_not_the_one_difference(code, ref, values):
    assert said(code, ref, values) is None


def test_code_that_does_not_parse_or_is_empty_says_nothing():
    assert one_edit("def f(:\n", "x = 1\n") == []
    assert one_edit("", "x = 1\n") == []
    assert one_edit("x = 1\n", "") == []


# ---------------------------------------------------------------- through a verification


@pytest.mark.slow
def test_a_verification_names_a_sum_for_a_mean_and_swapped_operands():
    from test_checks_support import check, verify

    setup = "import torch\ntorch.manual_seed(0)\nx = torch.randn(8, 3)\ny = torch.randn(8)\n"
    solution = "w = torch.zeros(3, requires_grad=True)\nloss = ((x @ w - y) ** 2).mean()\nloss.backward()\n"
    checks = [check(kind="tensor", expr="w.grad")]
    r = verify(solution.replace(".mean()", ".sum()"), solution, checks, setup=setup)
    assert not r["passed"]
    assert any("line 2 of your code" in s and "taking .sum() where it takes .mean()" in s for s in r["mistakes"])

    solution = "h = torch.sigmoid(x @ w)\n"
    setup2 = "import torch\ntorch.manual_seed(0)\nx = torch.randn(3, 3)\nw = torch.randn(3, 3)\n"
    r = verify("h = torch.sigmoid(w @ x)\n", solution, [check(kind="tensor", expr="h")], setup=setup2)
    assert not r["passed"]
    assert any("w @ x where it has x @ w: the same operands in the other order" in s for s in r["mistakes"])
    # a right answer says nothing at all
    assert verify(solution, solution, [check(kind="tensor", expr="h")], setup=setup2)["passed"]


# ---------------------------------------------------------------- one statement missing

STEP = (
    "def train_step(model, opt, xb, yb):\n"
    "    opt.zero_grad()\n"
    "    loss = loss_fn(model(xb), yb)\n"
    "    loss.backward()\n"
    "    opt.step()\n"
    "    return loss.item()\n"
)


def missing(code: str, solution: str = STEP) -> str | None:
    found = one_missing(code, solution)
    return found[0][0] if found else None


def test_the_one_statement_the_code_lacks_is_named_with_where_it_goes():
    code = STEP.replace("    opt.zero_grad()\n", "")
    assert missing(code) == (
        "your code matches the reference's statement for statement but for one it lacks in train_step(), after "
        "line 1 of your code: opt.zero_grad() (the reference runs it there; your code has nothing in its place)"
    )
    assert one_missing(code, STEP)[0][1] == "edit:missing"
    # left as a pass: that line is the slot
    text = missing(STEP.replace("    loss.backward()\n", "    pass\n"))
    assert "at line 4 of your code (where it has pass): loss.backward()" in text
    # prints, asserts and docstrings are not compared
    code = '"""My step."""\n' + STEP.replace("    opt.step()\n", "    print(loss)\n    assert loss > 0\n")
    assert "opt.step()" in missing(code)


@pytest.mark.parametrize(
    "code",
    [
        STEP,  # nothing missing
        STEP.replace("    opt.zero_grad()\n", "").replace("    opt.step()\n", ""),  # two missing
        STEP.replace("    opt.zero_grad()\n", "    model.zero_grad()\n"),  # written another way
        STEP.replace("    opt.step()\n", "").replace("    return", "    sched.step()\n    return"),  # and one more
        # in another order: not the reference's statement for statement
        STEP.replace("    opt.zero_grad()\n", "").replace("    opt.step()\n", "    opt.step()\n    opt.zero_grad()\n"),
        "",
        "def train_step(model, opt, xb, yb):\n    pass\n",  # the starter: far more than one missing
    ],
)
def test_code_that_is_not_the_reference_but_for_one_statement_is_not_read_as_missing_one(code):
    assert missing(code) is None


def test_a_whole_block_missing_is_not_one_statement():
    ref = "for x in xs:\n    total += x\nwith torch.no_grad():\n    w -= g\n"
    assert missing("for x in xs:\n    total += x\n", ref) is None
    assert missing("with torch.no_grad():\n    w -= g\n", ref) is None


@pytest.mark.slow
@pytest.mark.parametrize(
    ("code", "said"),
    [
        ("y = x.clone()\ny.mul_(2)\n", "but for one it lacks, after line 2 of your code: y.add_(1)"),
        ("y = x.clone()\ny.add_(1)\ny.mul_(2)\n", "runs `y.add_(1)` (line 2) before `y.mul_(2)` (line 3)"),
    ],
    ids=["missing", "moved"],
)
def test_a_verification_names_the_one_statement_missing_or_moved(code, said):
    from test_checks_support import check, verify

    setup = "import torch\nx = torch.arange(4.0)\n"
    solution = "y = x.clone()\ny.mul_(2)\ny.add_(1)\n"
    r = verify(code, solution, [check(kind="tensor", expr="y")], setup=setup)
    assert not r["passed"]
    assert any(said in s for s in r["mistakes"]), r["mistakes"]


# ---------------------------------------------------------------- one statement elsewhere

HOOK = "handle = model.register_forward_hook(record_shape)\nlogits = model(x)\nhandle.remove()\n"


def moved(code: str, solution: str = STEP) -> str | None:
    found = one_moved(code, solution)
    return found[0][0] if found else None


def test_two_neighbours_in_the_other_order_are_named_without_saying_which_moved():
    code = HOOK.replace("logits = model(x)\nhandle.remove()\n", "handle.remove()\nlogits = model(x)\n")
    assert moved(code, HOOK) == (
        "your code matches the reference's statement for statement but for their order: it runs "
        "`handle.remove()` (line 2) before `logits = model(x)` (line 3), and the reference runs them the other "
        "way round"
    )
    assert one_moved(code, HOOK)[0][1] == "edit:moved"


def test_one_statement_moved_further_is_named_with_both_places():
    ref = "before = w.detach().clone()\nloss = (w * x).sum()\nloss.backward()\nopt.step()\n"
    code = "loss = (w * x).sum()\nloss.backward()\nopt.step()\nbefore = w.detach().clone()\n"
    assert moved(code, ref) == (
        "your code matches the reference's statement for statement but for their order: it runs "
        "`before = w.detach().clone()` at line 4, after `opt.step()`, where the reference runs it before "
        "`loss = (w * x).sum()`"
    )
    # moved earlier, inside a function
    code = STEP.replace("    opt.step()\n", "").replace(
        "    opt.zero_grad()\n", "    opt.zero_grad()\n    opt.step()\n"
    )
    assert moved(code) == (
        "your code matches the reference's statement for statement but for their order in train_step(): it runs "
        "`opt.step()` at line 3, before `loss = loss_fn(model(xb), yb)`, where the reference runs it after "
        "`loss.backward()`"
    )


@pytest.mark.parametrize(
    ("code", "solution"),
    [
        (STEP, STEP),  # the same order
        (STEP.replace("    opt.zero_grad()\n", ""), STEP),  # one missing: not a move
        # two statements moved
        (
            STEP.replace("    opt.zero_grad()\n    loss = loss_fn(model(xb), yb)\n", "").replace(
                "    opt.step()\n", "    opt.step()\n    opt.zero_grad()\n    loss = loss_fn(model(xb), yb)\n"
            ),
            STEP,
        ),
        ("x = = 1\n", STEP),
    ],
)
def test_code_that_is_not_the_reference_but_for_one_moved_statement_is_not_read_as_moved(code, solution):
    assert moved(code, solution) is None


def test_a_statement_moved_into_or_out_of_a_block_is_named_with_both_blocks():
    ref = "opt.zero_grad()\nfor xb in batches:\n    loss = f(xb)\n    loss.backward()\nopt.step()\n"
    code = "for xb in batches:\n    opt.zero_grad()\n    loss = f(xb)\n    loss.backward()\nopt.step()\n"
    assert moved(code, ref) == (
        "your code matches the reference's statement for statement but for their order: it runs "
        "`opt.zero_grad()` at line 2, inside `for xb in batches`, first, where the reference runs it outside any "
        "block, first"
    )
    code = "opt.zero_grad()\nfor xb in batches:\n    loss = f(xb)\n    loss.backward()\n    opt.step()\n"
    assert moved(code, ref) == (
        "your code matches the reference's statement for statement but for their order: it runs `opt.step()` at "
        "line 5, inside `for xb in batches`, after `loss.backward()`, where the reference runs it outside any "
        "block, after the `for xb in batches` block"
    )
    # a block and a statement in the other order: said of the statement, both places true
    text = moved("with torch.no_grad():\n    w -= g\nloss = f(w)\n", "loss = f(w)\nwith torch.no_grad():\n    w -= g\n")
    assert "runs `loss = f(w)` at line 3, outside any block, after the `with torch.no_grad()` block" in text
    # into another function: not a move
    ref = "def a():\n    x = 1\n    y = 2\n\ndef b():\n    z = 3\n"
    assert moved("def a():\n    y = 2\n\ndef b():\n    x = 1\n    z = 3\n", ref) is None


def test_a_move_is_named_in_the_learner_s_own_names_and_not_across_other_names():
    ref = "def record_shape(module, inputs, output):\n    shapes.append(output.shape)\n\n" + HOOK
    code = (
        "def keep(m, args, out):\n    shapes.append(out.shape)\n\n"
        "h = model.register_forward_hook(keep)\nh.remove()\nlogits = model(x)\n"
    )
    assert "it runs `h.remove()` (line 5) before `logits = model(x)` (line 6)" in moved(code, ref)
    # the setup's names are not the learner's to rename: net is not model
    assert moved(code.replace("logits = model(x)", "logits = net(x)"), ref) is None
    # nor one name of the learner's for two of the reference's
    assert moved(code.replace("shapes.append(out.shape)", "shapes.append(m.shape)"), ref) is None


LOADER = "loader = make_loader(0)\nfirst = epoch_order(loader)\nsecond = epoch_order(loader)\n"


def test_the_one_statement_the_code_adds_is_named_with_its_line():
    code = LOADER.replace("second =", "loader.generator.manual_seed(0)\nsecond =")
    assert one_extra(code, LOADER) == [
        (
            "your code matches the reference's statement for statement but for one it adds, line 3: "
            "loader.generator.manual_seed(0) (the reference has nothing there)",
            "edit:extra",
        )
    ]
    assert one_extra(LOADER, LOADER) == [] and one_extra(LOADER, code) == []  # one it lacks is one_missing's


def test_the_one_place_code_differs_from_the_reference_is_shown_where_no_edit_kind_names_it():
    code = LOADER.replace("second = epoch_order(loader)", "second = epoch_order(make_loader(0))")
    assert one_edit(code, LOADER) == []  # no edit of a kind it names
    said = one_place(code, LOADER)
    assert said == [
        (
            "line 3 of your code is the one place it differs from the reference's, which it matches statement for "
            "statement elsewhere: `make_loader(0)` there is what to look at",
            "edit:place",
        )
    ]
    # Two places differ: neither is the one place.
    two = code.replace("first = epoch_order(loader)", "first = epoch_order(make_loader(1))")
    assert one_place(two, LOADER) == []
    # Where an edit of a kind is named, that sentence says it better.
    assert one_place(LOADER.replace("(0)", "(1)"), LOADER) == []


def test_a_part_that_differs_beside_two_statements_moved_is_not_the_one_place():
    # debugging-lab/invisible-layers with super().__init__() after the layers, written as a
    # list where the reference passes a generator: two differences, neither the one place.
    reference = (
        "class MLP(nn.Module):\n    def __init__(self, sizes):\n        super().__init__()\n"
        "        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes, sizes[1:]))\n"
    )
    code = (
        "class MLP(nn.Module):\n    def __init__(self, sizes):\n"
        "        self.layers = nn.ModuleList([nn.Linear(a, b) for a, b in zip(sizes, sizes[1:])])\n"
        "        super().__init__()\n"
    )
    assert one_place(code, reference) == []


def test_the_same_two_operands_taken_the_inverse_way_are_named_wherever_the_statements_differ():
    code = "def hook(module, args):\n    return (args[0] / s,) + tuple(args[1:])\n"
    solution = "def hook(module, args):\n    return (args[0] * s,)\n"
    assert edits.one_inverse(code, solution) == [
        (
            "line 2 of your code has args[0] / s where the reference's code has args[0] * s: the same two operands, "
            "the inverse operation",
            "edit:inverse",
        )
    ]
    assert "the opposite sign" in edits.one_inverse("z = pred + y\nout = z * 2\n", "out = 2 * (pred - y)\n")[0][0]


@pytest.mark.parametrize(
    "code, solution",
    [
        # the learner takes them both ways (a normalisation undone later): no one inverse
        ("a = x / s\nb = a * s\nc = x * s\n", "c = x * s\n"),
        # the reference does too
        ("c = x / s\n", "a = x / s\nc = x * s\n"),
        # two operations the inverse way: which one is the bug is not established
        ("a = x / s\nb = u - v\n", "a = x * s\nb = u + v\n"),
        # constants only
        ("a = 2 / 3\n", "a = 2 * 3\n"),
        # other operands
        ("a = x / t\n", "a = x * s\n"),
    ],
)
def test_no_inverse_is_named_where_it_is_not_the_one_difference_of_that_kind(code, solution):
    assert edits.one_inverse(code, solution) == []
