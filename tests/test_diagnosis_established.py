"""A diagnosis is stated only when it is established: each case is buggy learner code that
once drew a false sentence about its cause, graded in real kernels against the built-in
pack (with its authored mistakes) or its stripped copy (the tutor's own diagnosis alone).
The false sentence must be gone; where the cause can be established, a true one is said."""

import asyncio
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
from class_grading import grade_cases

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Case:
    name: str
    exercise: str  # LESSON/EXERCISE of the built-in pack
    pack: str  # "shipped" or "stripped"
    code: str
    false: tuple  # text of the false sentences (none may be said)
    true: str | None = None  # text of a true sentence that must be said, if one is established


def _code(text: str) -> str:
    return textwrap.dedent(text).lstrip()


TRAINING = """
import torch
import torch.nn.functional as F

model = Net().to(DEVICE)
opt = torch.optim.Adam(model.parameters(), lr=0.01)

val_accs = []
dropout_on = []
for epoch in range(6):
    model.train()
    dropout_on.append(model.training)
    for xb, yb in batches:
        model.train()  # again before every step: it changes nothing
        opt.zero_grad()
        F.cross_entropy(model(xb), yb).backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        acc = (model(X_val).argmax(dim=1) == y_val).float().sum().item()  # the bug: a count, not a mean
    val_accs.append(acc)

with torch.no_grad():
    acc_again = (model(X_val).argmax(dim=1) == y_val).float().sum().item()
"""


def _solution(path: str, *changes: tuple) -> str:
    """A reference solution of the built-in pack with one bug put in (each change must apply)."""
    text = (REPO / "lessons" / path).read_text()
    for old, new in changes:
        assert old in text, old
        text = text.replace(old, new)
    return text


RESTORES_TRAIN = """
import torch

def evaluate(model, X, y):
    model.eval()
    with torch.no_grad():
        predictions = model(X).argmax(dim=1)
    model.train()
    return (predictions == y).float().mean().item()

accuracy = evaluate(model, X, y)
"""

LOADER = """
import torch
from torch.utils.data import DataLoader, RandomSampler, SequentialSampler

def make_loader(seed):
    return DataLoader(ds, batch_size=4, {how})

loader = make_loader(0)
first = epoch_order(loader)
second = epoch_order(loader)
"""

# each micro-batch's sum over its examples divided by its own size, not by the whole batch's
ACCUMULATE = """
import torch.nn.functional as F

def accumulate(model, micro_batches):
    for xb, yb in micro_batches:
        (F.mse_loss(model(xb), yb, reduction="sum") / len(xb)).backward()
"""

CASES = (
    # The trace compared what the checks' calls of the learner's function did with what the
    # reference did while an authored expected value was computed (nothing).
    Case(
        "accumulate-against-an-authored-expected-value",
        "memory-levers/uneven-accumulation",
        "stripped",
        ACCUMULATE,
        ("the reference calls backward() 0 times", "each call adds to .grad"),
    ),
    # The reference only defines accumulate; the learner's code also tries it once: the run's
    # calls inside it were compared with the reference's run, which never calls it.
    Case(
        "a-function-tried-out-where-the-reference-only-defines-it",
        "memory-levers/uneven-accumulation",
        "stripped",
        ACCUMULATE + "\nimport torch\n\naccumulate(torch.nn.Linear(3, 1), MICRO_BATCHES)  # try it once\n",
        ("the reference calls backward() 0 times", "each call adds to .grad"),
    ),
    # The authored mistakes' conditions call evaluate(); those calls were compared with the
    # reference's calls of the last check (none), so a correct evaluate read as "eval() where
    # the reference stays in training mode".
    Case(
        "evaluate-mistake-probes-are-not-a-check",
        "train-eval/evaluate",
        "shipped",
        _solution("train-eval/solution_evaluate.py", (".float().mean()", ".float().sum()")),
        ("where the reference stays in training mode",),
        "accuracy is exactly 200 times the expected value, consistent with a sum where a mean over 200 values",
    ),
    # train(False) restoring eval mode was read as "the reference calls model.eval() here",
    # and the learner's forward pass as running with dropout.
    Case(
        "evaluate-restore-is-not-eval",
        "train-eval/evaluate",
        "stripped",
        _code(RESTORES_TRAIN),
        ("the reference calls model.eval() here; your code calls model.train(), so dropout stays active",),
        "your code leaves model in training mode (its last switch is model.train())",
    ),
    # A train() repeated before every step was compared call by call with the reference's.
    Case(
        "noisy-validation-repeated-train",
        "debugging-lab/noisy-validation",
        "stripped",
        _code(TRAINING),
        ("the reference calls model.eval() here", "so dropout stays active"),
    ),
    Case(
        "stuck-in-eval-repeated-train",
        "debugging-lab/stuck-in-eval",
        "shipped",
        _code(TRAINING),
        ("the reference calls model.eval() here", "so dropout stays active"),
    ),
    # A RandomSampler shuffles; "shuffle=True" beside it raises ValueError.
    Case(
        "random-sampler-is-a-shuffle",
        "data-loading/seeded-shuffle",
        "stripped",
        LOADER.format(how="sampler=RandomSampler(ds)"),
        ("with shuffle=True; yours has shuffle=False",),
        "your RandomSampler has no generator=",
    ),
    Case(
        "sequential-sampler-is-told-no-sampler",
        "data-loading/seeded-shuffle",
        "shipped",
        LOADER.format(how="sampler=SequentialSampler(ds), generator=torch.Generator().manual_seed(seed)"),
        ("Pass shuffle=True.",),
        "Pass shuffle=True (and no sampler=",
    ),
    # A .sum() loss is not gradients accumulated over backward() calls: one call ran.
    Case(
        "sum-loss-is-not-accumulation",
        "numpy-parity/grad-parity",
        "stripped",
        _solution("numpy-parity/solution_grad.py", ("** 2).mean()", "** 2).sum()")),
        ("gradients accumulated", "as if backward() ran"),
        "W_t.grad is 32x the expected gradient, consistent with a loss summed over 32 values",
    ),
    # A scaling that never ran (x2) is not "a mean where a sum was meant".
    Case(
        "a-scaling-that-never-ran",
        "in-place/saved-tensor",
        "stripped",
        "h = torch.sigmoid(x @ w)\nloss = h.sum()\nloss.backward()\n",
        ("a mean where a sum was meant", "a sum where a mean was meant"),
        "loss is exactly 1/2 of the expected value",
    ),
    # The learner clears w.grad before each backward (the reference after each update):
    # "yours is never cleared" was read from w.grad left set at the end.
    Case(
        "cleared-before-backward-is-cleared",
        "graph-lifetime/log-losses",
        "stripped",
        _code(
            """
            history = []
            for xb, yb in batches:
                w.grad = None
                loss = ((xb @ w - yb) ** 2).mean()
                loss.backward()
                with torch.no_grad():
                    w -= 0.2 * w.grad  # the bug: another learning rate
                history.append(loss.item())
            """
        ),
        ("yours is never cleared",),
    ),
    # Authored mistakes whose condition any failure satisfied.
    Case(
        "follow-the-input-column-on-the-left",
        "tensors/follow-the-input",
        "shipped",
        "import torch\n\ndef add_bias_column(x):\n    return torch.cat([x.new_ones(x.shape[0], 1), x], dim=1)\n",
        ("Make the column of ones from x",),
    ),
    Case(
        "forward-hook-registered-too-late",
        "modules/forward-hook",
        "shipped",
        _code(
            """
            def record_shape(module, inputs, output):
                shapes.append(output.shape)

            logits = model(x)
            handle = model.register_forward_hook(record_shape)
            handle.remove()
            """
        ),
        ("model.forward(x) computes the output but skips",),
    ),
    Case(
        "deterministic-block-restores-swapped",
        "reproducibility/deterministic-block",
        "shipped",
        _solution(
            "reproducibility/solution_det.py",
            ("algorithms(was_deterministic,", "algorithms(WAS_BENCHMARK,"),
            ("benchmark = was_benchmark", "benchmark = was_deterministic"),
            ("WAS_BENCHMARK", "was_benchmark"),
        ),
        ("restore the value you read at the start, not False",),
    ),
    Case(
        "saved-tensor-changed-under-no-grad",
        "in-place/saved-tensor",
        "shipped",
        "h = torch.sigmoid(x @ w)\nwith torch.no_grad():\n    h *= 2\nloss = h.sum()\nloss.backward()\n",
        ("writing through .data hides the change",),
        "h was changed in place after sigmoid saved it for its backward pass",
    ),
)


# Authored mistakes whose condition held for bugs their message is not about (issue 23's
# held-out mutants), and the tutor's own sentences that named a cause the code did not have.
CASES += (
    Case(
        "keep-intermediate-mean-with-retain-grad",
        "autograd/keep-intermediate",
        "shipped",
        "h = x * 3\nh.retain_grad()\ny = (h ** 2).mean()\ny.backward()\n",
        ("Only leaves keep .grad",),
    ),
    Case(
        "keep-intermediate-detached-into-a-leaf",
        "autograd/keep-intermediate",
        "shipped",
        "h = (x * 3).detach().requires_grad_()\ny = (h ** 2).sum()\ny.backward()\n",
        ("Only leaves keep .grad",),
    ),
    Case(
        "freeze-not-eval-body-never-frozen",
        "optimizers/freeze-not-eval",
        "shipped",
        _solution("optimizers/solution_freeze.py", ("model.body.requires_grad_(False)", "pass")),
        ("hands the optimizer the frozen parameters too",),
    ),
    Case(
        "masked-mean-mask-on-the-wrong-axis",
        "devices-precision/masked-mean",
        "shipped",
        _solution("devices-precision/solution_masked.py", (".unsqueeze(-1)", ".unsqueeze(0)")),
        ("masked_mean fails when x is not on the CPU",),
    ),
    Case(
        "digits-mlp-comparison-swapped",
        "capstone/digits-mlp",
        "shipped",
        _solution("capstone/solution_mlp.py", ("if val_acc > best_val_acc", "if best_val_acc > val_acc")),
        ("The model does not hold the best state",),
    ),
    Case(
        "digits-mlp-dataset-swapped",
        "capstone/digits-mlp",
        "shipped",
        _solution("capstone/solution_mlp.py", ("TensorDataset(X_train, y_train)", "TensorDataset(y_train, X_train)")),
        ("The model does not hold the best state",),
    ),
    Case(
        "standardize-fit-never-called",
        "capstone/standardize",
        "stripped",
        _solution("capstone/solution_standardize.py", ("norm.fit(X_train)", "pass")),
        ("your code never does",),
        "your code contains a torch.no_grad() block, but its run never entered it",
    ),
    Case(
        "digits-mlp-eval-dropped-inside-the-loop",
        "capstone/digits-mlp",
        "stripped",
        _solution("capstone/solution_mlp.py", ("        opt.step()\n    model.eval()\n", "        opt.step()\n")),
        ("does not switch back with model.train()",),
    ),
    Case(
        "scale-by-hand-grads-never-cleared",
        "mixed-precision/scale-by-hand",
        "stripped",
        _solution("mixed-precision/solution_byhand.py", ("    opt.zero_grad()\n", "")),
        ("your code never calls it, so the gradients are computed",),
        "your code contains opt.step(), but its run never reached it",
    ),
    Case(
        # train_step never steps; the run's losses come from a loop of the code's own function.
        # The reference's backward() calls are inside its train_step: they were dropped from
        # the comparison ("the reference calls backward() 0 times"), and the check's calls of
        # train_step were told of an opt.step() that only the other function holds.
        "train-step-the-work-in-a-function-of-its-own",
        "training-loop/train-step",
        "shipped",
        _code(
            """
            def train_step(model, opt, loss_fn, xb, yb):
                loss = loss_fn(model(xb), yb)
                return loss.item()

            def _mine(model, opt, loss_fn, xb, yb):
                opt.zero_grad()
                loss = loss_fn(model(xb), yb)
                loss.backward()
                opt.step()
                return loss.item()

            losses = [_mine(model, opt, loss_fn, X, y) for _ in range(30)]
            """
        ),
        ("the reference calls backward() 0 times", "but its run never reached it"),
        "the reference calls loss.backward() and opt.step() 3 times; your code calls neither",
    ),
    # An error every check raises alike (the optimizer refuses an empty parameter list) is not
    # what a check's authored message for a wrong value means.
    Case(
        "lora-everything-frozen",
        "memory-levers/lora",
        "shipped",
        _code(
            """
            import torch
            from torch import nn


            class LoRALinear(nn.Module):
                def __init__(self, base, r):
                    super().__init__()
                    self.base = base
                    self.A = nn.Parameter(torch.randn(r, base.in_features) / base.in_features**0.5)
                    self.B = nn.Parameter(torch.zeros(base.out_features, r))
                    self.requires_grad_(False)

                def forward(self, x):
                    return self.base(x) + x @ self.A.T @ self.B.T
            """
        ),
        ("The pretrained weights moved",),
    ),
    # A factor that equals a dim's size in the case reported only (1/max is 2 there).
    Case(
        "where-branches-swapped",
        "compile/no-breaks",
        "stripped",
        _code(
            """
            import torch

            def clipped_scale(x):
                m = x.abs().max()
                return 2 * torch.where(m > 1, x, x / m)
            """
        ),
        ("a sum where a mean over 2 values", "2 is the size of"),
        "the same arguments in the other order",
    ),
    # h is scaled out of place, and backward() is missing: the judge's copy of h counted a
    # write of its own decoding as h's, and the mistake for an in-place change fired.
    Case(
        "saved-tensor-no-backward",
        "in-place/saved-tensor",
        "shipped",
        "h = torch.sigmoid(x @ w)\nh = h * 2\nloss = h.sum()\n",
        ("h was changed in place",),
        "your code never calls it",
    ),
    # The same count in every failing case that can show it (bfloat16 ones round 1/6 to 0.1668):
    # the reading as a mean over T where the sum was meant stands.
    Case(
        "masked-mean-a-mean-for-the-sum",
        "devices-precision/masked-mean",
        "stripped",
        _solution("devices-precision/solution_masked.py", ("(x * mask).sum(dim=1)", "(x * mask).mean(dim=1)")),
        ("the opposite sign",),
        "consistent with a mean over 3 values where their sum was meant",
    ),
    # The column follows x; the result is cast afterwards: torch.cat promoted nothing.
    Case(
        "bias-column-result-cast",
        "tensors/follow-the-input",
        "shipped",
        _code(
            """
            import torch

            def add_bias_column(x):
                return torch.cat([x, x.new_ones(x.shape[0], 1)], dim=1).to(torch.float32)
            """
        ),
        ("makes torch.cat promote x", "create new tensors with dtype=x.dtype", "differs from the expected values"),
        "the expected dtype is x's",
    ),
    # Dropout left on inside the function: called again with the generators in another state,
    # it gives other values, where the reference gives the same. Once only the values' diff.
    Case(
        "attention-with-dropout",
        "reading-transformers/attention",
        "stripped",
        _code(
            """
            import math

            import torch.nn.functional as F


            def attention(q, k, v, keep):
                scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
                weights = F.dropout(scores.masked_fill(~keep, float("-inf")).softmax(dim=-1), p=0.1)
                return weights @ v
            """
        ),
        ("a sum where a mean",),
        "returns other values, where the reference returns the same: its result depends on more than its inputs",
    ),
    # A mean over every time step, padding included: each row is the expected one times
    # lengths[i] / T. Once only "exactly 1/3 of the expected value", of the smallest case.
    Case(
        "masked-mean-over-every-step",
        "devices-precision/masked-mean",
        "stripped",
        _code(
            """
            import torch

            def masked_mean(x, lengths):
                mask = torch.arange(x.shape[1], device=x.device) < lengths[:, None]
                return (x * mask.to(x.dtype).unsqueeze(-1)).mean(dim=1)
            """
        ),
        ("a sum where a mean", "a mean over"),
        "returns the reference's result times lengths / x.shape[1], row by row: consistent with dividing by "
        "x's size along dim 1, the same for every row, where lengths was meant",
    ),
)


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("established")
    stripped = tmp / "stripped"
    subprocess.run(
        [sys.executable, str(REPO / "scripts" / "strip_authored_feedback.py"), str(REPO / "lessons"), str(stripped)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    out = {}
    for name, pack in (("shipped", REPO / "lessons"), ("stripped", stripped)):
        out.update(grade_cases(pack, [c for c in CASES if c.pack == name], tmp / name))
    return out


# An outside review (second round): sentences that named a mechanism the code did not have,
# and a count read as a ratio of two sizes.
CASES += (
    Case(
        "b-t-cast-to-float32",
        "numpy-parity/grad-parity",
        "stripped",
        _code(
            """
        import numpy as np
        import torch

        R = X @ W + b - Y
        G = 2 * R / R.size
        dW_np = X.T @ G
        db_np = G.sum(axis=0)

        W_t = torch.from_numpy(W).requires_grad_()
        b_t = torch.from_numpy(b).float().requires_grad_()
        loss_t = ((torch.from_numpy(X) @ W_t + b_t - torch.from_numpy(Y)) ** 2).mean()
        loss_t.backward()
        """
        ),
        ("should share memory with the NumPy array",),
    ),
    Case(
        "descend-loss-scaled-to-zero",
        "tiny-autograd/descend",
        "shipped",
        _code(
            """
        def fit(xs, ys, w, b, lr, steps):
            losses = []
            for _ in range(steps):
                loss = Engine(0.0)
                for x, y in zip(xs, ys):
                    d = w * Engine(x) + b + Engine(-y)
                    loss = d * d + loss
                loss = Engine(1 // len(xs)) * loss
                w.grad = 0.0
                b.grad = 0.0
                loss.backward()
                w.data -= lr * w.grad
                b.data -= lr * b.grad
                losses.append(loss.data)
            return losses
        """
        ),
        ("cleared between backward() and the update",),
        "Every loss your fit returns is 0",
    ),
    Case(
        "mc-dropout-one-extra-pass",
        "train-eval/mc-dropout",
        "shipped",
        _code(
            """
        import torch


        def mc_predict(model, x, n):
            was_training = model.training
            total = torch.zeros_like(model(x))
            model.train()
            with torch.no_grad():
                for _ in range(n):
                    total += model(x).softmax(dim=1)
            model.train(was_training)
            return total / n


        probs = mc_predict(model, x, 400)
        """
        ),
        ("Every forward pass built a graph",),
        "Some of mc_predict's forward passes built a graph",
    ),
    Case(
        "noisy-validation-dropout-p0",
        "debugging-lab/noisy-validation",
        "shipped",
        _code(
            """
        import torch
        import torch.nn.functional as F

        model = Net().to(DEVICE)
        model.body[2].p = 0.0
        opt = torch.optim.Adam(model.parameters(), lr=0.01)

        val_accs = []
        dropout_on = []   # was the model in training mode when each epoch's training began?
        for epoch in range(6):
            model.train()
            dropout_on.append(model.training)
            for xb, yb in batches:
                opt.zero_grad()
                F.cross_entropy(model(xb), yb).backward()
                opt.step()
            with torch.no_grad():
                acc = (model(X_val).argmax(dim=1) == y_val).float().mean().item()
            val_accs.append(acc)

        # the same final weights, evaluated once more
        with torch.no_grad():
            acc_again = (model(X_val).argmax(dim=1) == y_val).float().mean().item()
        print("training mode per epoch:     ", dropout_on)
        print("validation accuracy per epoch:", val_accs)
        print("final weights, evaluated again:", acc_again)
        """
        ),
        ("validation ran with dropout active",),
    ),
    Case(
        "autocast-no-region-model-converted",
        "devices-precision/cpu-autocast",
        "shipped",
        _code(
            """
        import torch
        import torch.nn.functional as F


        def autocast_forward(model, x, y):
            model = model.to(torch.bfloat16)
            logits = model(x.to(torch.bfloat16))
            loss = F.cross_entropy(logits, y)
            return logits, loss


        logits, loss = autocast_forward(model, x, y)
        loss.backward()
        """
        ),
        ("its autocast region is opened for a fixed device", "it was computed outside the autocast region"),
    ),
    Case(
        "match-eager-never-cleared",
        "compile/match-eager",
        "shipped",
        _code(
            """
        import torch


        def both_grads(model, x):
            model.eval()
            compiled = torch.compile(model, backend="aot_eager")

            model.zero_grad()
            model(x).square().mean().backward()
            eager = [p.grad for p in model.parameters()]

            compiled(x).square().mean().backward()
            graphed = [p.grad for p in model.parameters()]

            torch.testing.assert_close(graphed, eager)
            return eager, graphed


        eager, graphed = both_grads(model, x)
        """
        ),
        ("zero_grad(set_to_none=False) zeroes each .grad in place and the next backward adds",),
    ),
    Case(
        "cross-entropy-divided-by-classes",
        "training-loop/cross-entropy-contract",
        "stripped",
        _code(
            """
        import torch
        import torch.nn.functional as F
        from torch import nn

        targets = torch.tensor(labels_csv, device=DEVICE).long()
        loss = nn.CrossEntropyLoss()(logits, targets)
        log_probs = F.log_softmax(logits, dim=1)
        loss_by_hand = -log_probs[torch.arange(len(targets), device=DEVICE), targets].sum() / logits.shape[1]
        """
        ),
        ("a sum where a mean",),
        "consistent with a divisor 3 where 4 was meant",
    ),
    Case(
        "descend-with-torch-sgd",
        "tiny-autograd/descend",
        "stripped",
        _code(
            """
        import torch


        def fit(xs, ys, w, b, lr, steps):
            tw = torch.tensor(w.data, dtype=torch.float64, requires_grad=True)
            tb = torch.tensor(b.data, dtype=torch.float64, requires_grad=True)
            opt = torch.optim.SGD([tw, tb], lr=lr)
            x = torch.tensor(xs, dtype=torch.float64)
            y = torch.tensor(ys, dtype=torch.float64)
            losses = []
            for _ in range(steps):
                opt.zero_grad()
                loss = ((tw * x + tb - y) ** 2).mean()
                loss.backward()
                w.grad, b.grad = tw.grad.item(), tb.grad.item()
                opt.step()
                losses.append(loss.item())
            w.data, b.data = tw.item(), tb.item()
            return losses
        """
        ),
        ("builds a new SGD each time it runs",),
    ),
    # A divisor one off the count it was given: read on the case's own sizes.
    Case(
        "mse-over-n-minus-one",
        "numpy-bridge/broadcast-trap",
        "stripped",
        "def mse(pred, target):\n    return ((pred.squeeze(1) - target) ** 2).sum() / (target.shape[0] - 1)\n",
        ("a sum where a mean", "a mean over"),
        "consistent with a count off by one (6 is the size of pred's dimension 0, and 5 is 6 - 1): n - 1 where n "
        "was meant, or n where n - 1 was",
    ),
    # A per-feature factor that is a tensor in play, transformed: the running variance's
    # missing square root in an eval-mode batch norm by hand.
    Case(
        "eval-batchnorm-without-the-square-root",
        "train-eval/batchnorm-by-hand",
        "stripped",
        _code(
            """
            import torch

            mean, var_b, var_u = x.mean(dim=0), x.var(dim=0, unbiased=False), x.var(dim=0, unbiased=True)
            rm = 0.9 * torch.zeros(3, device=DEVICE) + 0.1 * mean
            rv = 0.9 * torch.ones(3, device=DEVICE) + 0.1 * var_u
            y_train = (x - mean) / torch.sqrt(var_b + 1e-5)
            y_eval = (x - rm) / (rv + 1e-5)
            """
        ),
        ("a standard deviation that multiplies where it should divide",),
        "which is 1/sqrt(rv) element by element: consistent with a division by rv where its square root was meant",
    ),
    # A factor of 2 where nothing averages (h + 2 for h * 2): w's own size 2 is no count of a mean.
    Case(
        "a-factor-where-nothing-averages",
        "in-place/saved-tensor",
        "stripped",
        "h = torch.sigmoid(x @ w)\nh = h + 2\nloss = h.sum()\nloss.backward()\n",
        ("a mean over 2 values", "a sum where a mean"),
        "w.grad is exactly 1/2 of the expected value",
    ),
    # The same ratio with no count of 6 in play: the fact alone, no cause.
    Case(
        "ratio-with-no-count-in-play",
        "numpy-bridge/broadcast-trap",
        "stripped",
        "def mse(pred, target):\n    return 1.2 * ((pred.squeeze(1) - target) ** 2).mean()\n",
        ("off by one", "a divisor"),
    ),
)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_no_false_cause(case: Case, verdicts: dict):
    verdict = verdicts[case.name]
    assert verdict["grade"] in ("fail", "error"), verdict  # error: the code raised
    # What the verdict says: its diagnoses and its checks' sentences, authored ones included.
    said = "\n".join([*verdict["mistakes"], *(c["message"] for c in verdict["checks"] if not c["passed"])])
    for sentence in case.false:
        assert sentence not in said, said
    if case.true:
        assert case.true in said, said


def test_a_function_check_compares_each_call_with_the_reference_s_on_the_same_inputs():
    # The learner's function reads a value with .item(), so each call on meta raises before
    # its backward(): over the whole check the reference made twice as many backward() calls,
    # but every call that ran on both sides made the same one. Only the values differ.
    from tutor.grading.verify import verify_in_fresh_kernel
    from tutor.packs import models as m

    spec = {
        "kind": "function",
        "name": "grad_of_square",
        "args": [{"type": "tensor", "shape": ["n"]}],
        "dims": {"n": [2, 4]},
        "cases": 6,
        "devices": ["default", "meta"],
    }
    solution = "def grad_of_square(x):\n    x = x.detach().requires_grad_()\n    (x ** 2).sum().backward()\n    return x.grad\n"
    code = (
        "def grad_of_square(x):\n    scale = 3 + 0 * float(x.sum().item())\n    x = x.detach().requires_grad_()\n"
        "    (x ** 2).sum().backward()\n    return x.grad * scale\n"
    )
    exercise = m.Exercise(
        id="grad", title="grad", prompt="The gradient of sum(x ** 2).", solution=solution, checks=[spec]
    )
    verdict = asyncio.run(verify_in_fresh_kernel(exercise, code))
    assert not verdict.passed
    said = " ".join(verdict.mistakes)
    assert "calls backward()" not in said and "a sum where a mean" not in said, said
