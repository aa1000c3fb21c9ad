"""Sentences that once stated a false cause, each on the kind of code that drew it: the
trace showed a difference, but what the sentence said caused it was not what the code did.
Each runs real torch through the check library; the false sentence must be gone and, where
the cause is established, a true one said instead."""

import textwrap

import pytest
from test_checks_support import check, verify

pytestmark = pytest.mark.slow

SETUP = textwrap.dedent(
    """
    import torch
    from torch import nn
    torch.manual_seed(0)
    X = torch.randn(16, 3)
    y = torch.randint(0, 2, (16,))
    model = nn.Sequential(nn.Linear(3, 8), nn.Dropout(0.5), nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    loss_fn = nn.CrossEntropyLoss()
    """
)


def said(code: str, solution: str, checks, setup: str = SETUP) -> str:
    r = verify(textwrap.dedent(code), textwrap.dedent(solution), checks, setup=setup)
    assert not r["passed"]
    return "\n".join(r["mistakes"])


NORMALISER = """
class Norm(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.zeros(3))

    def fit(self, x):
        with torch.no_grad():
            self.mean.copy_(x.mean(dim=0))
        return self

norm = Norm()
"""


def test_a_no_grad_block_that_never_ran_is_not_a_missing_no_grad():
    # fit() holds the no_grad block; the bug is that fit() is never called
    text = said(NORMALISER, NORMALISER + "norm.fit(X)\n", [check(kind="tensor", expr="norm.mean")])
    assert "your code never does" not in text
    assert "your code contains a torch.no_grad() block, but its run never entered it" in text
    assert "the one inside fit()" in text


def test_grad_switched_off_for_good_is_not_a_graph_recorded():
    # set_grad_enabled(False) as a statement records nothing: what differs from the
    # reference's no_grad block is that the switch outlives the function
    evaluate = """
    def evaluate(model, X, y):
        was = model.training
        model.eval()
        {switch}
        predictions = model(X).argmax(dim=1)
        model.train(was)
        return (predictions == y).float().mean().item()

    accuracy = evaluate(model, X, y)
    """
    code = evaluate.format(switch="torch.set_grad_enabled(False)")
    solution = evaluate.format(switch="torch.set_grad_enabled(False)").replace(
        "torch.set_grad_enabled(False)\n        predictions = model(X).argmax(dim=1)",
        "with torch.no_grad():\n            predictions = model(X).argmax(dim=1)",
    )
    setup = SETUP + (
        "def grad_after(evaluate):\n"
        "    torch.set_grad_enabled(True)\n"
        "    evaluate(model, X, y)\n"
        "    after = torch.is_grad_enabled()\n"
        "    torch.set_grad_enabled(True)\n"
        "    return after\n"
    )
    checks = [check(kind="value", expr="grad_after(evaluate)")]
    text = said(code, solution, checks, setup)
    assert "autograd records that work too" not in text
    assert "your code switches autograd with torch.set_grad_enabled() instead, which stays in effect" in text
    # as a with block it ends with the block: no such sentence
    block = evaluate.format(switch="pass").replace(
        "predictions = model(X).argmax(dim=1)",
        "with torch.set_grad_enabled(False):\n            predictions = model(X).argmax(dim=1)",
    )
    r = verify(textwrap.dedent(block), textwrap.dedent(solution), checks, setup=setup)
    assert r["passed"], r


def test_a_step_that_a_condition_skipped_is_not_a_missing_step():
    loop = """
    for _ in range(3):
        opt.zero_grad()
        loss = loss_fn(model(X), y)
        loss.backward()
        {step}
    """
    code = loop.format(step="if loss.item() < 0:  # never true: the bug\n            opt.step()")
    text = said(code, loop.format(step="opt.step()"), [check(kind="tensor", expr="model[0].weight", rtol=1e-5)])
    assert "your code never calls it, so the gradients are computed" not in text
    assert "your code contains opt.step(), but its run never reached it, where the reference's steps 3 times" in text
    # another object's step() (a scheduler's) is not the optimizer's step written
    code = loop.format(step="sched.step()")
    setup = SETUP + "sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1)\n"
    solution = loop.format(step="opt.step()\n        sched.step()")
    text = said(code, solution, [check(kind="tensor", expr="model[0].weight", rtol=1e-5)], setup)
    assert "your code never calls it, so the gradients are computed but the weights never change" in text


EPOCHS = """
scores = []
for epoch in range(3):
    model.train()
    opt.zero_grad()
    loss_fn(model(X), y).backward()
    opt.step()
    {validate}
    with torch.no_grad():
        scores.append(model(X).sum().item())
model.eval()
"""


def test_an_eval_left_out_inside_the_loop_is_not_a_missing_switch_back():
    # The one model.eval() left is the last line: no training follows it.
    code = EPOCHS.format(validate="pass")
    text = said(code, EPOCHS.format(validate="model.eval()"), [check(kind="value", expr="scores")])
    assert "does not switch back with model.train()" not in text
    assert "later training steps run in eval mode" not in text


def test_training_after_an_eval_that_is_never_undone_is_named():
    loop = """
    model.train()
    for epoch in range(3):
        opt.zero_grad()
        loss_fn(model(X), y).backward()
        opt.step()
        model.eval()
        with torch.no_grad():
            last = model(X).sum().item()
        {back}
    """
    text = said(
        loop.format(back="pass"), loop.format(back="model.train()"), [check(kind="tensor", expr="model[0].weight")]
    )
    assert "your code calls model.eval() for evaluation but does not switch back with model.train() afterwards" in text


def test_a_size_one_axis_in_another_place_is_not_only_a_transpose():
    setup = "import torch\nx = torch.tensor([[5.0]])\n"
    text = said(
        "result = torch.cat([x, torch.ones_like(x)], dim=0)",
        "result = torch.cat([x, torch.ones_like(x)], dim=1)",
        [check(kind="tensor", expr="result")],
        setup,
    )
    assert "transpose or permute it (a batch-first" not in text
    assert (
        "result holds the expected values laid out along dim 0 where dim 1 was expected (shape (2, 1), expected "
        "(1, 2)), consistent with a cat, stack, unsqueeze or flatten along dim 0 where dim 1 was meant" in text
    )


def test_a_leaf_replaced_under_no_grad_is_the_cut_not_an_op_on_the_loss():
    setup = (
        "import torch\ntorch.manual_seed(0)\nw = torch.zeros(3, requires_grad=True)\n"
        "batches = [(torch.randn(4, 3), torch.randn(4)) for _ in range(3)]\n"
    )
    loop = """
    for xb, yb in batches:
        loss = ((xb @ w - yb) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            {update}
        w.grad = None
    """
    code = loop.format(update="w = w - 0.1 * w.grad  # the bug: a new tensor, not an update of w")
    text = said(code, loop.format(update="w -= 0.1 * w.grad"), [check(kind="tensor", expr="w")], setup)
    assert "made a value autograd cannot follow" not in text
    assert "w no longer requires grad where the reference's does: your code replaced it with a new tensor" in text


def test_a_call_written_but_never_reached_is_not_a_call_missing():
    """checkpoints/safe-roundtrip without seek(0): torch.load raised inside the argument of
    load_state_dict, so that call never ran; "your code never does" was false (it is there).
    And a check whose expression raised part-way is not compared call by call at all."""
    from tutor.checks import tracediff
    from tutor.checks.trace import Tracer

    written = "def from_bytes(data, model):\n    model.load_state_dict(torch.load(io.BytesIO(data)))\n"
    missing = "def from_bytes(data, model):\n    return model\n"

    def diffs(code: str, raised: bool) -> list:
        tracer = Tracer()  # not installed: the events are the two sides' as they arrived
        with tracer.recording("ref", 0):
            tracer._add("load_state", "model")
        try:
            with tracer.recording("learner", 0):
                if raised:
                    raise EOFError
        except EOFError:
            pass
        return [sentence for sentence, _ in tracediff.differences(tracer, code=code)]

    said = diffs(written, raised=False)
    assert said == [
        "the reference calls model.load_state_dict(...); your code's load_state_dict(...) is written but never "
        "ran here (something before it raised, or a branch skipped it), so model keeps the state it had"
    ], said
    assert diffs(missing, raised=False) == [
        "the reference calls model.load_state_dict(...); your code never does, so model keeps the state it had"
    ]
    assert diffs(written, raised=True) == [] and diffs(missing, raised=True) == []


INIT_SETUP = "import torch\nfrom torch import nn\ntorch.manual_seed(0)\nlayer = nn.Linear(8, 4)\n"


def test_a_draw_made_by_another_function_in_the_same_place_is_not_another_order():
    """normal_ where the reference calls kaiming_normal_: the same draws in the same places,
    one by another function (its scale is the bug), not numbers drawn in another order;
    a true reordering and an extra draw are each named as what they are."""
    weight = [check(kind="tensor", expr="layer.weight")]
    he = "nn.init.kaiming_normal_(layer.weight, nonlinearity='relu')\nnn.init.zeros_(layer.bias)\n"
    text = said("nn.init.normal_(layer.weight, std=2 / 8)\nnn.init.zeros_(layer.bias)\n", he, weight, INIT_SETUP)
    assert "different order" not in text, text
    assert "your draw #1 is nn.init.normal_(...) where the reference's is nn.init.kaiming_normal_(...)" in text
    extra = "torch.rand(3)\n" + he
    assert "your code makes a draw the reference does not: #1, torch.rand(...)" in said(extra, he, weight, INIT_SETUP)
    two = "nn.init.kaiming_normal_(layer.weight, nonlinearity='relu')\nnn.init.uniform_(layer.bias)\n"
    swapped = "nn.init.uniform_(layer.bias)\nnn.init.kaiming_normal_(layer.weight, nonlinearity='relu')\n"
    assert "random numbers are drawn in a different order: the reference's draw #1" in said(
        swapped, two, weight, INIT_SETUP
    )


def test_values_too_small_for_the_tolerance_are_not_the_right_values_in_another_order():
    """Gradients of about 1e-8 that underflowed to zeros: all of them lie within 1e-7 of zero,
    so any order of the expected values "matched" and a transpose was named; the comparison
    now scales with the values. Tiny values truly transposed are still named."""
    setup = "import torch\ng_ref = torch.linspace(-9e-8, 9e-8, 9)\nm = torch.arange(6.0).reshape(2, 3) * 1e-9\n"
    text = said("g = torch.zeros(9)\n", "g = g_ref.clone()\n", [check(kind="tensor", expr="g")], setup)
    assert "wrong order" not in text, text
    text = said("t = m.t().reshape(2, 3)\n", "t = m.clone()\n", [check(kind="tensor", expr="t")], setup)
    assert "t holds the right values in the wrong order" in text, text


def test_a_case_names_its_arguments_as_the_function_got_them_after_their_transform():
    """A mask drawn as floats and made bool by the argument's transform is a bool mask in
    the case the function failed for, not a float32 one."""
    fn = check(
        kind="function",
        name="masked",
        cases=3,
        args=[{"type": "tensor", "shape": [3, 3]}, {"type": "tensor", "shape": [3, 3], "transform": "x > 0"}],
    )
    text = verify(
        "def masked(x, keep):\n    return x * keep\n",
        "def masked(x, keep):\n    return x.masked_fill(~keep, -1.0)\n",
        [fn],
        setup="import torch\n",
    )["checks"][0]["message"]
    assert "keep of shape (3, 3) bool" in text and "keep of shape (3, 3) float32" not in text, text


def test_a_graph_the_reference_lacks_is_named_only_where_a_failing_check_is_about_graphs():
    """y keeps its graph where the reference detaches it, but the checks on y pass and only a
    rule on the source fails: the graph is no cause of that failure. Where a check on y's
    graph fails, it is."""
    setup = "import torch\nx = torch.randn(4)\nw = torch.randn(4, requires_grad=True)\n"
    solution = "y = (x * w).detach()\n"
    values = check(kind="tensor", expr="y.detach()")
    rule = check(kind="source", forbid=["'hi'"])
    text = said("y = x * w\nnote = 'hi'\n", solution, [values, rule], setup)
    assert "still part of the graph" not in text, text
    graph = check(kind="value", expr="y.requires_grad", expected="False", message="y must not require grad")
    text = said("y = x * w\n", solution, [values, graph], setup)
    assert "y is still part of the graph (grad_fn=MulBackward0) where the reference's is detached" in text, text


def test_gradients_taken_from_autograd_grad_are_not_no_gradients_at_all():
    """A step written with torch.autograd.grad and an update by hand: no step(), yet the
    weights change; "so the gradients are computed but the weights never change" was false."""
    reference = """
    for _ in range(3):
        opt.zero_grad()
        loss = loss_fn(model(X), y)
        loss.backward()
        opt.step()
    """
    by_hand = """
    for _ in range(3):
        loss = loss_fn(model(X), y)
        grads = torch.autograd.grad(loss, list(model.parameters()))
        with torch.no_grad():
            for p, g in zip(model.parameters(), grads):
                p -= 0.5 * g * 2  # the bug: twice the learning rate
    """
    text = said(by_hand, reference, [check(kind="tensor", expr="model[0].weight")])
    assert "no gradient is computed" not in text and "weights never change" not in text, text
    # the same gradients put in .grad for opt.step(): a right answer, and it passes
    right = (
        by_hand.replace("p -= 0.5 * g * 2  # the bug: twice the learning rate", "p.grad = g") + "        opt.step()\n"
    )
    assert verify(
        textwrap.dedent(right), textwrap.dedent(reference), [check(kind="tensor", expr="model[0].weight")], setup=SETUP
    )["passed"]


def test_a_check_of_code_that_stopped_does_not_state_its_authored_cause():
    # The author's message explains a wrong value ("set by hand"); code that stopped at a
    # SyntaxError never got that far, and the check says only that.
    checks = [
        check(
            kind="value",
            expr="bool(a.grad is not None)",
            label="a's gradient",
            message="The gradient must come from backward(): a .grad set by hand is a number typed in.",
        )
    ]
    solution = "a = torch.tensor(2.0, requires_grad=True)\n(a * a).backward()\n"
    for code in ("a = = 1\n", "raise ValueError('stop')\na = 1\n"):
        r = verify(code, solution, checks)
        assert not r["passed"]
        text = r["checks"][0]["message"]
        assert "set by hand" not in text, text
        assert "your code did not run" in text or "stopped" in text, text
    # a wrong value still gets the author's words
    r = verify("a = torch.tensor(2.0, requires_grad=True)\na.grad = None\n", solution, checks)
    assert "set by hand" in r["checks"][0]["message"]


def test_a_name_left_as_the_setup_made_it_by_code_that_stopped_is_not_said_to_be_untouched():
    # numpy-bridge/back-to-numpy: .numpy() of a tensor that requires grad raises on line 1,
    # before the zero_() below it; "nothing your code did to scores is left" read as if the
    # code never meant to change it.
    setup = "import torch\nscores = torch.tensor([0.5, 1.5], requires_grad=True)\n"
    solution = "scores_np = scores.detach().clone().numpy()\nwith torch.no_grad():\n    scores.zero_()\n"
    checks = [check(kind="tensor", expr="scores", compare=["shape", "values"])]
    stopped = "scores_np = scores.clone().numpy()\nwith torch.no_grad():\n    scores.zero_()\n"
    assert "still exactly what the setup made" not in said(stopped, solution, checks, setup=setup)
    # code that ran to its end and left scores alone is still told so
    ran = "scores_np = scores.detach().clone().numpy()\n"
    assert "still exactly what the setup made" in said(ran, solution, checks, setup=setup)


def test_a_second_step_is_not_set_against_a_step_after_each_backward_the_reference_never_took():
    """mixed-precision/scale-by-hand with opt.step() inside the loop over parameters: the
    reference skipped the step of the call whose gradients overflowed, so it does not step
    once after each backward(); the sentence says only what the reference's order shows."""
    from tutor.checks import tracediff

    events = _protocol_events
    skipped = tracediff._optimizer(events("ZBSS"), events("ZBZBS"))  # theirs: one call skipped
    assert skipped is not None and skipped.endswith("where the reference never steps twice with no backward() between")
    each = tracediff._optimizer(events("ZBSS"), events("ZBS"))
    assert each is not None and each.endswith("where the reference steps once after each backward()")


def _protocol_events(letters: str, stale: bool | None = None):
    from types import SimpleNamespace

    kinds = {"Z": "zero_grad", "B": "backward", "S": "step", "C": "clip"}
    return [
        SimpleNamespace(kind=kinds[c], name="loss" if c == "B" else "opt", info={"stale": stale} if c == "B" else {})
        for c in letters
    ]


def test_a_zero_grad_after_the_step_is_named_only_where_a_backward_added_onto_old_gradients():
    """optimizers/untouched-head with zero_grad() moved after step(): the first backward() adds
    onto the warm-up's gradients. Onto no gradients at all, the order changes nothing."""
    from tutor.checks import tracediff

    said = tracediff._optimizer(_protocol_events("BSZ", stale=True), _protocol_events("ZBS"))
    assert said == (
        "your code calls opt.zero_grad() only after loss.backward(), where the reference calls it first: that "
        "backward() added onto gradients already in .grad, left from before"
    )
    assert tracediff._optimizer(_protocol_events("BSZ", stale=False), _protocol_events("ZBS")) is None


def test_a_clip_inside_the_loop_of_micro_batches_is_named():
    from tutor.checks import tracediff

    said = tracediff._optimizer(_protocol_events("ZBCBBS"), _protocol_events("ZBBBCS"))
    assert said is not None and said.startswith(
        "your code clips the gradients (clip_grad_norm_) before its last backward() ahead of a step():"
    )
    assert "the norm it returns is of a partial sum" in said
    assert tracediff._optimizer(_protocol_events("ZBBBCS"), _protocol_events("ZBBBCS")) is None
    # A clip after the last backward() too measures the whole sum: no "partial sum", but the
    # sum holds gradients clipped before
    said = tracediff._optimizer(_protocol_events("ZBCBCBCS"), _protocol_events("ZBBBCS"))
    assert said is not None and "partial sum" not in said
    assert "as well as after it: that backward() adds its gradients onto ones already clipped" in said


def test_a_square_transpose_is_told_as_a_transpose_not_as_a_reshape():
    """W.t_() where W was meant: the values are W's transpose, the same shape; nothing was
    reshaped, so the reshape-for-transpose advice would name a cause the code does not have."""
    setup = "import torch\nw = torch.arange(9.0).reshape(3, 3)\n"
    text = said("t = w.clone().t_()\n", "t = w.clone()\n", [check(kind="tensor", expr="t")], setup)
    assert "t holds the expected tensor with dimensions 0 and 1 swapped (a transpose of it" in text, text
    assert "reshape() and view()" not in text, text


def test_no_change_the_other_way_where_the_expected_value_is_a_multiple_of_the_source():
    # Expected zeros (a tensor zeroed in place) and the learner's 2 * w, where w is a source:
    # "w changed by the expected amount the other way" holds arithmetically, by coincidence
    # of scale, and would send the learner after a sign.
    import torch

    from tutor.checks import causes

    w = torch.linspace(-1.0, 1.0, 6).reshape(2, 3)
    assert causes.reversed_change("scores", 2 * w, torch.zeros(2, 3), [("w", w)]) is None
    assert causes.reversed_change("scores", 3 * w, 2 * w, [("w", w)]) is None
    # an update added where it is subtracted is still said
    grad = torch.tensor([[0.5, -0.2, 0.1], [0.3, 0.0, -0.4]])
    said = causes.reversed_change("W_next", w + 0.1 * grad, w - 0.1 * grad, [("W", w)])
    assert said is not None and "the other way" in said


def test_requires_grad_turned_off_where_the_reference_uses_no_grad_is_said_as_that():
    # linear-init/port-weights: requires_grad_(False) so copy_ may run, never turned back on:
    # nothing is recorded, so "autograd records that work too" would be false
    setup = "import torch\nlayer = torch.nn.Linear(3, 2)\nW = torch.randn(3, 2)\n"
    solution = "with torch.no_grad():\n    layer.weight.copy_(W.T)\n"
    code = "layer.requires_grad_(False)\nlayer.weight.copy_(W.T)\n"
    text = said(code, solution, [check(kind="value", expr="layer.weight.requires_grad")], setup=setup)
    assert "autograd records that work too" not in text, text
    assert "your code turns requires_grad off instead (requires_grad_(False) or .requires_grad = False)" in text, text


def test_a_weights_only_refusal_names_what_the_file_holds():
    # checkpoints/resumable storing torch.get_rng_state (the function, never called): the file
    # holds no module, so "save model.state_dict()" would point at the wrong object
    import io

    import torch

    from tutor.checks import signatures

    def refusal(obj) -> str:
        buffer = io.BytesIO()
        torch.save(obj, buffer)
        buffer.seek(0)
        try:
            torch.load(buffer, weights_only=True)
        except Exception as exc:
            return str(exc)
        raise AssertionError("loaded")

    said = signatures.for_error(refusal({"rng": torch.get_rng_state}))
    assert "it holds torch.random.get_rng_state, a Python object pickled by reference" in said, said
    assert "for a function, what calling it returns" in said and "save model.state_dict()" not in said, said
    said = signatures.for_error(refusal({"model": torch.nn.Linear(2, 2)}))
    assert "it holds a pickled module (torch.nn.modules.linear.Linear)" in said, said
    assert "save model.state_dict()" in said, said
    # the first line alone names nothing: no object is guessed
    said = signatures.for_error(refusal({"rng": torch.get_rng_state}).splitlines()[0])
    assert "it holds a pickled object" in said and "model.state_dict()" not in said, said


def test_a_value_of_another_shape_and_dtype_gets_no_advice_to_convert_it():
    # mixed-precision/float32-island returning (sim, emb): emb is sim's float32 matrix, which
    # no .to(torch.bfloat16) would make right
    import torch

    from tutor.checks.compare import tensor_problems

    problems = tensor_problems(torch.zeros(5, 5), torch.zeros(5, 3, dtype=torch.bfloat16), "emb", ["shape", "dtype"])
    said = " ".join(p.sentence for p in problems)
    assert "emb has dtype torch.float32, expected torch.bfloat16" in said and "convert with" not in said, said
    (same,) = tensor_problems(torch.zeros(5, 3), torch.zeros(5, 3, dtype=torch.bfloat16), "emb", ["shape", "dtype"])
    assert "convert with .to(torch.bfloat16)" in same.sentence, same.sentence


def test_an_error_in_a_dataloader_worker_is_said_as_the_worker_s_own():
    # iterable-data/shard-stream with info.num_worker: torch re-raises "Caught AttributeError
    # in DataLoader worker process 0." and the worker's own error is the message's last line
    import torch
    from torch.utils.data import DataLoader, IterableDataset

    from tutor.checks.describe import exception_phrase

    class Stream(IterableDataset):
        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            return iter(range(info.id, 4, info.num_worker))

    try:
        list(DataLoader(Stream(), num_workers=1))
    except AttributeError as exc:
        said = exception_phrase(exc)
    else:
        raise AssertionError("the worker did not raise")
    assert said == (
        "AttributeError: 'WorkerInfo' object has no attribute 'num_worker' (in DataLoader worker process 0)"
    ), said


def test_too_many_arguments_for_forward_is_read_as_a_pre_hook_s_return_only_where_one_is_registered():
    # hooks/pre-hook returning (args[0] * s,) + args: forward gets the input twice
    from tutor.checks import signatures

    text = "TypeError: Sequential.forward() takes 2 positional arguments but 3 were given"
    code = "def scale_inputs(model, s):\n    return model.register_forward_pre_hook(lambda m, a: (a[0] * s,) + a)\n"
    said = signatures.pre_hook_arguments(text, code)
    assert said is not None and said.startswith("forward() was given 2 positional arguments where it takes 1"), said
    assert "a pre-hook that returns more items than forward takes" in said, said
    # no pre-hook in the code: the call itself gave too many, and nothing is said of hooks
    assert signatures.pre_hook_arguments(text, "out = model(x, x)\n") is None


def test_a_fix_in_a_check_s_words_is_not_a_graph_that_failed():
    # The failing check found shared memory; its author's words name the fix ("with
    # torch.no_grad(): ...copy_"). Writing through .data records nothing, so "autograd
    # records that work too" would be a false cause.
    setup = "import torch\nW = torch.randn(3, 3)\nlayer = torch.nn.Linear(3, 3, bias=False)\n"
    message = "layer.weight must hold a copy of W.T: with torch.no_grad(): layer.weight.copy_(W.T)."
    checks = [check(kind="value", expr="layer.weight.data_ptr() != W.data_ptr()", expected="True", message=message)]
    text = said("layer.weight.data = W\n", "with torch.no_grad():\n    layer.weight.copy_(W.T)\n", checks, setup)
    assert "autograd records that work too" not in text
    # a check that found a graph still hears it
    checks = [check(kind="tensor", expr="out", compare=["values", "requires_grad"])]
    setup += "x = torch.randn(2, 3)\n"
    text = said("out = layer(x)\n", "with torch.no_grad():\n    out = layer(x)\n", checks, setup)
    assert "autograd records that work too" in text


def test_torch_autograd_grad_is_not_said_to_add_to_grad():
    # torch.autograd.grad returns the gradients: "each call adds to .grad" would be false.
    setup = "import torch\nx = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)\n"
    solution = "g = 2 * x.detach()\n"
    code = "(g,) = torch.autograd.grad((x**2).sum(), x)\ng = g * 3\n"
    text = said(code, solution, [check(kind="tensor", expr="g")], setup)
    assert "each call adds to .grad" not in text, text
    assert "your code calls torch.autograd.grad once, which returns the gradients and adds nothing to .grad" in text
