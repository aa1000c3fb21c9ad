"""``_setup.NAME`` in a check: what the setup bound to NAME, whatever the learner's code bound
to that name since (tutor/checks/setupnames.py).

A check that the learner kept a reference (the update went through the tensor an optimizer
holds) cannot rest on two names the learner's code may both rebind: ``w = new; held = w``
makes ``w is held`` true of a tensor the setup never made. The judge's path with both roles
in this process (run_local); real torch and NumPy."""

from __future__ import annotations

from test_authoring_errors import validate_broken
from test_checks_support import check, mistake, verify

from tutor.checks import setupnames

SETUP = "import torch\nw = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)\nheld = w\n"
STEP = "with torch.no_grad():\n    w -= 0.5\n"
SAME = check(kind="value", id="same", label="w is the setup's tensor", expr="w is _setup.w")


def test_an_update_through_the_setups_tensor_passes():
    result = verify(STEP, STEP, [check(kind="tensor", expr="w"), SAME], setup=SETUP)
    assert result["passed"], result


def test_rebinding_both_names_to_a_new_tensor_fails():
    # w is held holds of the new tensor; the setup's tensor, which held referred to, never moved.
    forged = "w = (w - 0.5).detach().requires_grad_()\nheld = w\n"
    old_check = check(kind="value", expr="w is held")
    assert verify(forged, STEP, [check(kind="tensor", expr="w"), old_check], setup=SETUP)["passed"]
    result = verify(forged, STEP, [check(kind="tensor", expr="w"), SAME], setup=SETUP)
    assert not result["passed"], result
    failed = [c for c in result["checks"] if not c["passed"]]
    assert [c["id"] for c in failed] == ["same"], failed
    assert "w is the setup's tensor is False, expected True" in failed[0]["message"], failed


def test_each_world_reads_its_own_setups_binding():
    # The variant binds a new w (and held) in the second world: were _setup.w the first
    # world's tensor, the right answer would fail there.
    variant = "w = torch.tensor([3.0, 4.0], requires_grad=True)\nheld = w\n"
    worlds = [{"seed": 1, "variant": variant}]
    assert verify(STEP, STEP, [check(kind="tensor", expr="w"), SAME], setup=SETUP, worlds=worlds)["passed"]


def test_a_setup_array_shared_with_nothing_is_told_though_the_name_was_rebound():
    setup = "import numpy as np\nimport torch\narr = np.linspace(0.0, 1.0, 5)\n"
    solution = "shared = torch.from_numpy(arr)\narr[0] = 42.0\n"
    forged = "shared = torch.tensor(arr)\narr = shared.numpy()\narr[0] = 42.0\n"
    shares = check(
        kind="value",
        id="shares",
        label="shared views the setup's arr",
        expr="np.shares_memory(shared.numpy(), _setup.arr)",
    )
    checks = [check(kind="tensor", expr="shared"), shares]
    assert verify(solution, solution, checks, setup=setup)["passed"]
    result = verify(forged, solution, checks, setup=setup)
    assert not result["passed"], result
    assert [c["id"] for c in result["checks"] if not c["passed"]] == ["shares"], result


def test_a_mistake_reads_the_setups_binding_too():
    told = "w is a new tensor: the setup's never moved."
    forged = "w = (w - 0.5).detach().requires_grad_()\nheld = w\n"
    result = verify(
        forged,
        STEP,
        [check(kind="tensor", expr="w"), SAME],
        setup=SETUP,
        mistakes=[mistake(when="w is not _setup.w and bool((_setup.w == held.detach() + 0.5).all())", message=told)],
    )
    assert result["mistakes"] == [told], result


def test_code_that_names_the_setups_bindings_fails():
    result = verify(STEP + "_setup = None\n", STEP, [check(kind="tensor", expr="w"), SAME], setup=SETUP)
    assert not result["passed"], result
    assert "Your code reaches _setup (line 3)" in str(result), result


def test_only_the_names_the_checks_read_are_kept():
    payload = [[{"expr": "w is _setup.w and x"}], [{"when": "_setup.arr is arr or mine._setup.no"}]]
    assert setupnames.reads(payload) == ["arr", "w"]


def test_pack_validate_reports_a_setup_name_the_setup_never_binds(tmp_path):
    out, at = validate_broken(tmp_path, "_setup.missing", "_setup")
    assert f"{at}_setup.missing reads what the setup bound to missing, and the setup binds no missing" in out, out


HELPERS = (
    "import torch\n"
    "data = torch.ones(3)\n"
    "class Stream:\n"
    "    def values(self):\n"
    "        return data * 2\n"
    "def draws():\n"
    "    return Stream().values()\n"
)


def test_code_that_rebinds_what_the_setups_functions_read_fails():
    # draws() reads Stream and data when a check calls it: rebound, the check would run the
    # exercise's helper on the code's objects.
    checks = [check(kind="tensor", expr="draws()"), check(kind="tensor", expr="out")]
    right = "out = draws() + 1\n"
    assert verify(right, right, checks, setup=HELPERS)["passed"]
    for forged, name in (
        ("out = draws() + 1\ndata = torch.zeros(3)\n", "data"),
        ("out = draws() + 1\nclass Stream:\n    def values(self):\n        return torch.full((3,), 2.0)\n", "Stream"),
    ):
        result = verify(forged, right, checks, setup=HELPERS)
        assert not result["passed"], result
        assert f"Your code binds {name} to another object, and the exercise's own helpers read {name}" in str(result)


def test_a_name_the_reference_binds_itself_is_the_codes_to_make():
    # The setup's stub of the function the exercise asks for: draws() calls it, and the
    # reference defines it, so the learner's must replace it.
    setup = "import torch\ndef make():\n    raise NotImplementedError\ndef draws():\n    return make() * 2\n"
    solution = "def make():\n    return torch.ones(2)\n"
    result = verify(solution, solution, [check(kind="tensor", expr="draws()")], setup=setup)
    assert result["passed"], result
