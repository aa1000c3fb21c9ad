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
