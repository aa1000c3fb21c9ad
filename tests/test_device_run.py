"""The device run: after a pass on the CPU, code whose results follow DEVICE runs again with
DEVICE set to the meta device, so tensors left on the CPU (or drawn by the CPU's generator
and moved) fail on any machine, as they would on a GPU."""

from __future__ import annotations

import pytest

from tutor.checks.runner import run_verification
from tutor.grading.verify import build_payload, verdict_from_result
from tutor.packs.catalog import Catalog


@pytest.fixture(scope="module")
def catalog():
    return Catalog.load()


def verdict(catalog, target: str, code: str, **changes):
    # A first run slower than half the limit skips the device run (by design); on a loaded
    # machine the exercise's own limit would make these tests depend on the load.
    changes.setdefault("time_limit", 600)
    exercise = catalog.find_exercise(target).exercise.model_copy(update=changes)
    return verdict_from_result(run_verification(build_payload(exercise, code, "cpu")))


NO_DEVICE = (
    "import torch\nfeatures = torch.tensor(rows, dtype=torch.float32)\nlabels = torch.tensor(classes, device=DEVICE)\n"
)
CPU_DRAW = (
    "import torch\nw = (torch.randn(3, 2) * 0.01).to(DEVICE).requires_grad_()\nloss = (x @ w).sum()\nloss.backward()\n"
)


def test_features_left_on_the_cpu_fail_on_a_cpu_machine(catalog):
    v = verdict(catalog, "tensors/features-and-labels", NO_DEVICE)
    assert v.status == "fail", v.feedback()
    assert "when DEVICE is a GPU" in v.feedback() and "features is on cpu, expected DEVICE" in v.feedback()
    ok = verdict(
        catalog, "tensors/features-and-labels", catalog.find_exercise("tensors/features-and-labels").exercise.solution
    )
    assert ok.passed, ok.feedback()


def test_weights_drawn_on_the_cpu_then_moved_fail_on_a_cpu_machine(catalog):
    v = verdict(catalog, "tensors/leaf-parameter", CPU_DRAW)
    assert v.status == "fail", v.feedback()
    assert "drawn by the CPU's generator and then moved to DEVICE" in v.feedback()
    ok = verdict(catalog, "tensors/leaf-parameter", catalog.find_exercise("tensors/leaf-parameter").exercise.solution)
    assert ok.passed, ok.feedback()


def test_a_shared_tensor_moved_to_device_is_a_copy_on_a_cpu_machine(catalog):
    code = (
        "import torch\nshared = torch.from_numpy(arr).to(DEVICE)\n"
        "features = torch.tensor(arr, dtype=torch.float32, device=DEVICE)\narr[0] = 42.0\n"
    )
    v = verdict(catalog, "numpy-bridge/share-or-copy", code)
    assert v.status == "fail" and "shared is on DEVICE, expected cpu" in v.feedback(), v.feedback()


def test_device_run_follows_the_field_and_defaults_to_where_device_is_used(catalog):
    assert verdict(catalog, "tensors/features-and-labels", NO_DEVICE, device_run=False).passed
    ex = catalog.find_exercise("tensors/features-and-labels").exercise
    assert ex.device_run is None and ex.follows_device  # the prompt says DEVICE
    assert not ex.model_copy(update={"setup": "", "prompt": "no device here"}).follows_device


def test_code_that_needs_data_on_meta_is_not_blamed_but_a_device_mismatch_is(catalog):
    target = "tensors/features-and-labels"
    needs_data = "import torch\nfeatures = torch.tensor(rows, dtype=torch.float32, device=DEVICE)\n"
    needs_data += "labels = torch.tensor(classes, device=DEVICE)\nfirst = features.cpu().numpy()[0, 0]\n"
    assert verdict(catalog, target, needs_data).passed
    mismatch = "import torch\nfeatures = torch.tensor(rows, dtype=torch.float32, device=DEVICE)\n"
    mismatch += "labels = torch.tensor(classes, device=DEVICE)\nscaled = torch.cat([features, torch.ones(1, 3)])\n"
    v = verdict(catalog, target, mismatch)
    assert v.status == "fail" and "your code raises RuntimeError at line 4" in v.feedback(), v.feedback()


def test_numpy_without_cpu_fails_with_the_error_a_gpu_gives(catalog):
    target = "numpy-bridge/back-to-numpy"
    later = "with torch.no_grad():\n    scores.zero_()\n"  # the starter's own lines, kept
    v = verdict(catalog, target, "scores_np = scores.detach().numpy().copy()\n" + later)
    assert v.status == "fail", v.feedback()
    assert "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu()" in v.feedback()
    ok = verdict(catalog, target, "scores_np = scores.detach().cpu().numpy().copy()\n" + later)
    assert ok.passed, ok.feedback()


@pytest.mark.slow
def test_a_model_left_on_the_cpu_fails_when_a_check_expression_calls_it(catalog):
    # Meta kernels do not compare devices; the device run refuses mixed operations as a GPU does.
    # Through real kernels (the judged path): in this process, what earlier tests left in
    # torch's global state could change what a module's forward meets.
    import asyncio

    from tutor.grading.verify import verify_in_fresh_kernel

    target = "modules/mlp"
    exercise = catalog.find_exercise(target).exercise.model_copy(update={"time_limit": 600})
    solution = exercise.solution
    left_on_cpu = solution.replace(".to(DEVICE)", "")
    assert left_on_cpu != solution
    v = asyncio.run(verify_in_fresh_kernel(exercise, left_on_cpu))
    assert v.status == "fail", v.feedback()
    assert (
        "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu" in v.feedback()
    )


def test_setup_statistics_left_on_the_cpu_fail_as_on_a_gpu():
    payload = {
        "setup": "import torch\nmean = torch.tensor([1.0, 2.0, 3.0])\nx = torch.randn(4, 3, device=DEVICE)\n",
        "solution": "y = x - mean.to(DEVICE)\n",
        "checks": [{"kind": "tensor", "expr": "y"}],
        "device": "cpu",
        "device_run": True,
    }
    assert run_verification({**payload, "code": "y = x - mean.to(x.device)\n"})["passed"]
    r = run_verification({**payload, "code": "y = x - mean\n"})
    assert not r["passed"]
    text = str(r)
    assert "when DEVICE is a GPU" in text and "at least two devices" in text
    # What that error means is said, as for an error of the normal run.
    assert any(m.startswith("tensors on different devices met in one operation") for m in r["mistakes"]), r


def test_errors_of_metas_missing_data_are_not_device_errors():
    from tutor.checks.devicerun import device_error

    assert not device_error("NotImplementedError", "Cannot copy out of meta tensor; no data!")
    assert not device_error("RuntimeError", "Tensor.item() cannot be called on meta tensors")
    # torch 2.2 says it so
    assert not device_error(
        "NotImplementedError",
        "aten::_local_scalar_dense: attempted to run this operator with Meta tensors, but there was no abstract "
        "impl or Meta kernel registered.",
    )
    assert device_error(
        "RuntimeError", "Expected all tensors to be on the same device, but found at least two devices, meta and cpu!"
    )
    assert device_error(
        "TypeError",
        "can't convert meta device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.",
    )
    assert device_error(
        "RuntimeError",
        "Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) on device cuda should be the same",
    )
    assert not device_error("ValueError", "too many values to unpack")


def test_the_tamper_guard_never_accuses_the_caches_of_torch_or_the_standard_library():
    # Pickling a Parameter sets copyreg's __slotnames__ cache; deepcopy and re keep caches too.
    payload = {
        "setup": "import torch\n",
        "solution": "y = torch.ones(2)\n",
        "code": (
            "import copy, io, pickle, re, torch\nnet = torch.nn.Linear(2, 2)\nbuf = io.BytesIO()\n"
            "torch.save(net.state_dict(keep_vars=True), buf)\ncopy.deepcopy(net)\n"
            "pickle.dumps(torch.nn.Parameter(torch.ones(2)))\nre.compile('a+b')\ny = torch.ones(2)\n"
        ),
        "checks": [{"kind": "tensor", "expr": "y"}],
        "device": "cpu",
    }
    from tutor.checks.judge import run_local

    for result in (run_local(payload), run_verification(payload)):
        assert result["passed"] and not result.get("tampered"), result


CPU_SCALAR_LEAF = (
    "import torch\na = torch.tensor(A, device=DEVICE, requires_grad=True)\n"
    "b = torch.tensor(B, requires_grad=True)\nc = a * b + b ** 2\nc.backward()\n"
)


def test_a_cpu_scalar_leaf_fails_although_backward_into_it_works_on_a_gpu(catalog):
    # On a GPU a 0-d CPU tensor may meet CUDA ones and backward() moves its gradient back,
    # so this code runs there with b left on the CPU; on meta autograd cannot copy out, and
    # the run must still go on far enough to see where b lives.
    v = verdict(catalog, "autograd/two-leaves", CPU_SCALAR_LEAF)
    assert v.status == "fail", v.feedback()
    assert "b is on cpu, expected DEVICE" in v.feedback() and "a is on" not in v.feedback()


@pytest.mark.slow
def test_a_cpu_scalar_leaf_fails_on_the_judged_path_too(catalog):
    import asyncio

    from tutor.grading.verify import verify_in_fresh_kernel

    exercise = catalog.find_exercise("autograd/two-leaves").exercise
    v = asyncio.run(verify_in_fresh_kernel(exercise, CPU_SCALAR_LEAF))
    assert v.status == "fail" and "b is on cpu, expected DEVICE" in v.feedback(), v.feedback()
    ok = asyncio.run(verify_in_fresh_kernel(exercise, exercise.solution))
    assert ok.passed, ok.feedback()


def test_backward_from_meta_into_a_cpu_leaf_gives_both_leaves_a_gradient():
    import torch

    from tutor.checks.devicerun import Generators, SameDevice

    for mode in (Generators, SameDevice):
        with mode():
            a = torch.tensor(2.0, device="meta", requires_grad=True)
            b = torch.tensor(3.0, requires_grad=True)
            (a * b + b**2).backward()
        assert a.grad is not None and a.grad.is_meta
        assert b.grad is not None and b.grad.device.type == "cpu"


STATISTICS = {
    "setup": "import torch\nmean = torch.tensor([1.0, 2.0, 3.0])\nx = torch.randn(4, 3, device=DEVICE)\n",
    "solution": "y = x - mean.to(DEVICE)\n",
    "checks": [{"kind": "tensor", "expr": "y", "id": "centred"}],
    "device": "cpu",
    "device_run": True,
    "mistakes": [
        # true of the CPU-only code and of the right one alike: advice only where a run fails
        {"when": "bool((y == x - mean.to(x.device)).all())", "message": "Move mean to x's device.", "id": "m1"},
        # the checks passed before the device run: their failure there is not this check's
        {"failed_check": "centred", "message": "y is not x minus the mean.", "id": "m2"},
    ],
}


@pytest.mark.parametrize("path", ["in-process", "judged"])
def test_authored_mistakes_speak_only_for_a_failing_run(path):
    from tutor.checks.judge import run_local

    run = run_verification if path == "in-process" else run_local
    passed = run({**STATISTICS, "code": "y = x - mean.to(x.device)\n"})
    # a pass never evaluates the conditions: no advice, and no call of the learner's code for it
    assert passed["passed"] and passed["mistakes"] == [] and passed["mistake_ids"] == []
    failed = run({**STATISTICS, "code": "y = x - mean\n"})
    # only the device run fails it: the conditions are met as for any failure, after it ran
    assert not failed["passed"] and failed["mistakes"] == ["Move mean to x's device."], failed


# Numbers read out of a DEVICE tensor and put into a new one: on a GPU the new tensor is on
# the CPU. Meta has no numbers to read, so the device run answers the reads with the ones
# the normal run got (tutor/checks/reads.py) and goes on to see where window lives.
COPIED_BY_LIST = "import torch\nwindow = torch.tensor(signal[2:6].tolist())\nsignal.zero_()\n"
COPIED_BY_ITEMS = "import torch\nwindow = torch.tensor([signal[i].item() for i in range(2, 6)])\nsignal.zero_()\n"
COPIED_TO_DEVICE = "import torch\nwindow = torch.tensor(signal[2:6].tolist(), device=DEVICE)\nsignal.zero_()\n"


def test_numbers_read_out_of_device_tensors_into_a_new_tensor_fail_on_a_cpu_machine(catalog):
    for code in (COPIED_BY_LIST, COPIED_BY_ITEMS):
        v = verdict(catalog, "views-strides/clone-window", code)
        assert v.status == "fail", (code, v.feedback())
        assert "when DEVICE is a GPU" in v.feedback() and "window is on cpu, expected DEVICE" in v.feedback()
    assert verdict(catalog, "views-strides/clone-window", COPIED_TO_DEVICE).passed


@pytest.mark.slow
def test_numbers_read_out_of_device_tensors_fail_on_the_judged_path_too(catalog):
    import asyncio

    from tutor.grading.verify import verify_in_fresh_kernel

    exercise = catalog.find_exercise("views-strides/clone-window").exercise
    v = asyncio.run(verify_in_fresh_kernel(exercise, COPIED_BY_LIST))
    assert v.status == "fail" and "window is on cpu, expected DEVICE" in v.feedback(), v.feedback()
    ok = asyncio.run(verify_in_fresh_kernel(exercise, COPIED_TO_DEVICE))
    assert ok.passed, ok.feedback()


def test_reads_are_answered_in_order_and_only_for_the_code_lines():
    import torch

    from tutor.checks.devicerun import Generators, no_data_error
    from tutor.checks.reads import Reads

    reads = Reads()
    t = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    with reads.recording():
        ns: dict = {"t": t}
        exec(compile("a = t[0, 1].item()\nb = t.tolist()\nc = bool(t[1, 1] > 3)\n", "<your code>", "exec"), ns)
        assert repr(t)  # torch's own reads, for printing: not the code's
        ns["b"].append("changed by the code")  # the recorded list is a copy
    assert [e[0] for e in reads.entries] == ["item", "tolist", "__bool__"]
    meta = torch.zeros(2, 2, device="meta")
    with Generators(reads):
        ns = {"t": meta}
        exec(compile("a = t[0, 1].item()\nb = t.tolist()\nc = bool(t[1, 1] > 3)\n", "<your code>", "exec"), ns)
    assert (ns["a"], ns["b"], ns["c"]) == (2.0, [[1.0, 2.0], [3.0, 4.0]], True)
    # A read the normal run did not make (another call, another shape) raises as meta does,
    # and the device run then decides nothing.
    with reads.recording():
        exec(compile("a = t[0, 1].item()\n", "<your code>", "exec"), {"t": t})
    with Generators(reads), pytest.raises(RuntimeError) as raised:
        exec(compile("b = t.tolist()\n", "<your code>", "exec"), {"t": meta})
    assert no_data_error("RuntimeError", str(raised.value))
    assert torch.Tensor.item is torch._C.TensorBase.item  # the recorder's wrappers are gone


def test_a_judge_runs_the_references_device_run_once_per_exercise(catalog, monkeypatch):
    """The reference's meta run depends on the exercise alone: a judge that serves a class
    keeps it, and one learner's marks (a CPU draw) never reach the next learner's verdict."""
    from tutor.checks import devicerun
    from tutor.checks.judge import run_local

    exercise = catalog.find_exercise("tensors/leaf-parameter").exercise.model_copy(update={"time_limit": 600})
    monkeypatch.setattr(devicerun, "_REFERENCES", type(devicerun._REFERENCES)())
    runs = []
    real = devicerun.run_code

    def counted(source, namespace, filename, what):
        runs.append(filename)
        return real(source, namespace, filename, what)

    monkeypatch.setattr(devicerun, "run_code", counted)
    solution = exercise.solution
    verdicts = [
        verdict_from_result(run_local(build_payload(exercise, code, "cpu"))) for code in (solution, CPU_DRAW, solution)
    ]
    assert [v.status for v in verdicts] == ["pass", "fail", "pass"], [v.feedback() for v in verdicts]
    assert "drawn by the CPU's generator and then moved to DEVICE" in verdicts[1].feedback()
    assert runs.count(devicerun.SOLUTION) == 1 and len(devicerun._REFERENCES) == 1
    other = exercise.model_copy(update={"solution": solution + "\n"})
    assert verdict_from_result(run_local(build_payload(other, solution, "cpu"))).passed
    assert runs.count(devicerun.SOLUTION) == 2 and len(devicerun._REFERENCES) == 2
