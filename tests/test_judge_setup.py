"""An exercise's judge setup: code only the judge runs, after the setup, before the reference.

What decides a verdict (expected values, an oracle, helpers that compute them) lives there,
so the learner's kernel, which runs the setup alone, never holds it (docs/trust.md). The
judge's path with both roles in this process (run_local); the built-in pack's use of it is
read from the catalog. Real torch."""

from __future__ import annotations

from test_checks_support import check, mistake, verify

from tutor.packs.catalog import Catalog

SETUP = "import torch\nx = torch.randn(4)\n"
JUDGE = "_doubled = x * 2\n"


def test_the_learners_namespace_never_holds_the_judge_setups_names():
    # The learner's code lists every name its namespace holds; the check reads that list.
    result = verify(
        "y = x * 2\nnames = dir()\n",
        "y = x * 2\nnames = dir()\n",
        [
            check(kind="tensor", expr="y", expected="_doubled"),
            check(kind="value", expr="'_doubled' in names", expected="False"),
        ],
        setup=SETUP,
        judge_setup=JUDGE,
    )
    assert result["passed"], result


def test_the_judge_setups_names_are_the_judges_in_every_check_and_mistake():
    # The learner binds _doubled itself, to what its own wrong y is: a check and a mistake
    # that read _doubled still read the judge's.
    result = verify(
        "y = x * 3\n_doubled = y\n",
        "y = x * 2\n",
        [check(kind="value", expr="bool(torch.equal(y, _doubled))", expected="True")],
        setup=SETUP,
        judge_setup=JUDGE,
        mistakes=[mistake(when="torch.allclose(y, _doubled * 1.5)", message="y is x * 3, not x * 2.")],
    )
    assert not result["passed"], result
    assert result["mistakes"] == ["y is x * 3, not x * 2."], result


def test_a_judge_setup_that_draws_random_numbers_leaves_the_references_draws_alone():
    # The reference and the learner's code draw after the same setup; the judge setup's own
    # draws must not move the reference's generator.
    result = verify(
        "z = torch.randn(3)\n",
        "z = torch.randn(3)\n",
        [check(kind="tensor", expr="z")],
        setup=SETUP,
        judge_setup="_noise = torch.randn(100)\n",
    )
    assert result["passed"], result


def test_a_judge_setup_runs_after_each_worlds_variant():
    # In the further world the variant rebinds x: _doubled must be computed from that x.
    result = verify(
        "y = x * 2\n",
        "y = x * 2\n",
        [check(kind="tensor", expr="y", expected="_doubled")],
        setup=SETUP,
        judge_setup=JUDGE,
        worlds=[{"seed": 1, "variant": "x = torch.arange(7.0)\n"}],
    )
    assert result["passed"], result
    wrong = verify(
        "y = torch.tensor(" + repr([0.0] * 4) + ") + x[:4] * 2\n",  # right for 4 values only
        "y = x * 2\n",
        [check(kind="tensor", expr="y", expected="_doubled")],
        setup=SETUP,
        judge_setup=JUDGE,
        worlds=[{"seed": 1, "variant": "x = torch.arange(7.0)\n"}],
    )
    assert not wrong["passed"], wrong


def test_the_built_in_packs_expected_values_live_in_judge_setups():
    # What these exercises' checks and mistakes compare with (torch's own gradients, batch
    # norm and attention) is the judge's: no setup the learner's kernel runs binds it.
    catalog = Catalog.load()
    for key, names in {
        "numpy-parity/grad-parity": ("_dW", "_db"),
        "numpy-parity/sgd-step-parity": ("_dW", "_step_from"),
        "numpy-parity/ce-grad-parity": ("_dZ", "_softmax"),
        "train-eval/batchnorm-by-hand": ("_truth_y_train", "_truth_rv"),
        "reading-transformers/attention": ("_oracle", "_slip"),
    }.items():
        exercise = catalog.find_exercise(key).exercise
        learners = "\n".join([exercise.setup, *exercise.variants])
        for name in names:
            assert name in exercise.judge_setup, (key, name)
            assert name not in learners, (key, name)
