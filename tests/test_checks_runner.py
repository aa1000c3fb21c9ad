"""run_verification as a whole: namespaces and seeds, learner errors with only their own
frames, authoring errors, mistakes, python checks, JSON results, injection as source."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from test_checks_support import check, mistake, only, verify

# Every test here verifies in a real kernel.
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent


def test_result_contract_shape():
    r = verify("t = torch.zeros(2)", "t = torch.zeros(2)", [check(kind="value", expr="t", id="zeros")])
    assert set(r) == {"passed", "error", "checks", "mistakes", "mistake_ids"}
    assert r["passed"] is True and r["error"] is None and r["mistakes"] == [] and r["mistake_ids"] == []
    assert set(only(r)) == {"id", "kind", "passed", "expected", "actual", "message", "details"}
    assert only(r)["id"] == "zeros" and only(r)["kind"] == "value"
    assert only(r)["message"].startswith("✓ ")


def test_namespaces_are_seeded_alike_and_have_device_and_main():
    code = (
        "import random\nimport numpy as np\nw = torch.randn(5)\nu = np.random.rand(3)\nk = random.random()\n"
        "dev = DEVICE\nname = __name__\n"
    )
    checks = [
        check(kind="same_as_solution", names=["w", "u", "k"]),
        check(kind="value", expr="dev", expected="torch.device('cpu')"),
        check(kind="value", expr="name", expected="'__main__'"),
        check(kind="value", expr="torch.randn(2)"),
    ]  # expressions are evaluated with the same seed too
    assert verify(code, code, checks, seed=7)["passed"]
    # the seed is torch.manual_seed(seed) (and numpy's, and random's) right before setup
    first_draw = check(
        kind="python",
        code="assert torch.equal(w, (torch.manual_seed(7), torch.randn(5))[1])",
        message="w is not the first draw after seeding",
    )
    assert verify(code, code, [first_draw], seed=7)["passed"]
    assert not verify(code, code, [first_draw], seed=8)["passed"]


def test_learner_exception_shows_only_their_own_frames():
    code = textwrap.dedent("""\
        import torch

        def make():
            return torch.zeros(2, 3).view(4)

        t = make()
        u = t + 1
    """)
    r = verify(code, "t = torch.zeros(4)\nu = t + 1", [check(kind="value", expr="u")])
    err = r["error"]
    assert err["stage"] == "code" and err["ename"] == "RuntimeError" and err["line"] == 4
    tb = err["traceback"]
    assert tb[0] == "Traceback (most recent call last):"
    files = [line for line in tb if line.strip().startswith("File ")]
    assert files == ['  File "<your code>", line 6, in <module>', '  File "<your code>", line 4, in make']
    assert "    t = make()" in tb and "    return torch.zeros(2, 3).view(4)" in tb
    assert tb[-1].startswith("RuntimeError: shape '[4]' is invalid")
    text = "\n".join(tb)
    assert "torch" not in text.replace("torch.zeros", "") and "runner" not in text and "ptfund" not in text
    assert only(r)["message"].startswith("u is not defined: your code stopped at line 6 with RuntimeError: shape")
    assert r["passed"] is False


def test_syntax_error_and_sys_exit_are_reported_not_raised():
    r = verify("t = (1,\n", "t = 1", [check(kind="value", expr="t")])
    assert r["error"]["stage"] == "code" and r["error"]["ename"] == "SyntaxError" and r["error"]["line"] == 1
    assert only(r)["message"].startswith("t is not defined: your code did not run (SyntaxError: ")
    r = verify("import sys\nt = 1\nsys.exit(0)\n", "t = 1", [check(kind="value", expr="t")])
    assert r["error"]["ename"] == "SystemExit" and r["error"]["line"] == 3
    assert r["checks"][0]["passed"] and not r["passed"]


def test_deep_recursion_traceback_is_capped():
    code = "def f(n):\n    if n > 300:\n        raise ValueError(n)\n    return g(n + 1)\ndef g(n):\n    return f(n)\nf(0)\n"
    tb = verify(code, "", [])["error"]["traceback"]
    assert sum(line.startswith("  File ") for line in tb) == 40
    assert any("more frames" in line for line in tb) and tb[-1] == "ValueError: 301"


def test_setup_and_solution_errors_are_authoring_errors():
    c = check(kind="value", expr="t")
    r = verify("t = 1", "t = 1", [c], setup="import torch\nraise KeyError('data')\n")
    assert r["error"]["stage"] == "setup" and r["error"]["line"] == 2
    assert '  File "<setup>", line 2, in <module>' in r["error"]["traceback"]
    assert only(r)["message"].startswith("not checked: the exercise's setup code failed")
    r = verify("t = 1", "t = 1 / 0", [c])
    assert r["error"]["stage"] == "solution" and r["error"]["ename"] == "ZeroDivisionError"
    assert only(r)["details"]["authoring_error"] is True
    assert "a problem in the exercise, not in your code" in only(r)["message"]
    r = verify("t = 1", "t = 1", [check(kind="value", expr="t", expected="undefined_name")])
    assert r["error"] is None and only(r)["details"]["authoring_error"] is True


def test_authored_message_leads_a_failure_and_is_hidden_on_success():
    c = check(kind="value", expr="t.shape", expected="(2, 3)", message="Make t a 2x3 tensor.")
    r = verify("t = torch.zeros(3, 2)", "", [c])
    assert only(r)["message"] == "Make t a 2x3 tensor.\nt.shape is (3, 2), expected (2, 3)"
    r = verify("t = torch.zeros(2, 3)", "", [c])
    assert only(r)["message"] == "✓ t.shape is (2, 3)"


def test_an_error_several_checks_raise_alike_leaves_out_their_authored_messages():
    # The error is common to both checks, not what either message means: no message is said.
    trained = check(kind="value", id="trained", expr="train(model)", expected="1.0", message="The weights moved.")
    loss = check(kind="value", id="loss", expr="train(model) < 2", expected="True", message="The loss must fall.")
    code = "model = None\ndef train(m):\n    raise ValueError('optimizer got an empty parameter list')\n"
    r = verify(code, "model = None\ndef train(m):\n    return 1.0\n", [trained, loss])
    messages = [x["message"] for x in r["checks"]]
    assert all("ValueError: optimizer got an empty parameter list" in m for m in messages), messages
    assert not any("The weights moved." in m or "The loss must fall." in m for m in messages), messages
    # A check that alone raises keeps its message: its own requirement may be the error's cause.
    ok = check(kind="value", id="ok", expr="model", expected="None")
    r = verify(code, "model = None\ndef train(m):\n    return 1.0\n", [trained, ok])
    assert r["checks"][0]["message"].startswith("The weights moved.\n"), r["checks"][0]["message"]


def test_an_error_raised_alike_but_for_its_numbers_or_in_a_python_check_counts_as_one():
    # linear-init/default-init with uniform_'s bounds the wrong way round: each check's layer
    # has its own bound, so the texts differ in their numbers only
    code = "def init(n):\n    raise RuntimeError(f'uniform_ expects from={1 / n:.4f} > to={-1 / n:.4f}')\n"
    solution = "def init(n):\n    return n\n"
    first = check(kind="value", id="a", expr="init(4)", expected="4", message="init builds a module of its own.")
    second = check(kind="value", id="b", expr="init(5)", expected="5", message="init draws from another range.")
    r = verify(code, solution, [first, second])
    messages = [x["message"] for x in r["checks"]]
    assert all("RuntimeError: uniform_ expects" in m for m in messages), messages
    assert not any("builds a module" in m or "another range" in m for m in messages), messages
    # a python check that raised in the learner's code counts with the value checks
    shares = check(kind="python", id="shares", code="assert init(6) == 6", message="The workers do not share the work.")
    r = verify(code, solution, [first, shares])
    messages = [x["message"] for x in r["checks"]]
    assert not any("builds a module" in m or "share the work" in m for m in messages), messages


def test_a_check_that_alone_raises_what_the_code_itself_raised_drops_its_message():
    # modules/forward-hook with a hook that raises: the code stops there, and the one check
    # that calls the model again raises the same; "still adds to shapes" would be false
    code = "def f():\n    raise TypeError(\"'torch.Size' object is not callable\")\nf()\n"
    again = check(kind="value", id="again", expr="f()", expected="0", message="Another call still adds to shapes.")
    r = verify(code, "def f():\n    return 0\n", [again])
    message = r["checks"][0]["message"]
    assert "TypeError: 'torch.Size' object is not callable" in message and "still adds" not in message, message


def test_code_that_does_not_parse_gets_no_authored_cause():
    # autograd/clear-first with a line pasted twice: nothing ran, and "a gradient written or
    # changed by hand" was said of the setup's own gradient
    c = check(kind="value", id="grad", expr="t", expected="2", message="t was written by hand.")
    r = verify("t = 2\nt = t +\n", "t = 2\n", [c], setup="t = 1\n")
    message = r["checks"][0]["message"]
    assert "written by hand" not in message, message


def test_python_check_shows_the_failing_assert_and_its_values_but_no_other_code():
    code = "secret_assert_text = 1"
    c = check(
        kind="python", code="assert t.sum() == ref.t.sum(), 'the sum is off'", message="t must sum like the reference."
    )
    ok = verify("t = torch.ones(3)", "t = torch.ones(3)", [c])
    assert ok["passed"] and only(ok)["message"] == "✓ check passed"
    r = verify("t = torch.zeros(3)", "t = torch.ones(3)", [c])
    assert only(r)["message"] == (
        "t must sum like the reference.\nthe sum is off "
        "(t.sum() == ref.t.sum() failed: t.sum() is tensor(0.); ref.t.sum() is tensor(3.); t is tensor([0., 0., 0.]))"
    )
    bare = check(kind="python", code="n = 4\nassert t.shape[0] == n")
    assert only(verify("t = torch.zeros(3)", "", [bare]))["message"] == (
        "t.shape[0] == n failed: t.shape[0] is 3; n is 4; t is tensor([0., 0., 0.])"
    )
    call = check(kind="python", code="assert torch.allclose(t, ref.t)", label="t against the reference")
    msg = only(verify("t = torch.zeros(2)", "t = torch.ones(2)", [call]))["message"]
    assert msg == (  # the label leads a failing line too
        "t against the reference: torch.allclose(t, ref.t) failed: t is tensor([0., 0.]); ref.t is tensor([1., 1.])"
    )
    private = check(kind="python", code="assert _helper(t) == 3", message="t needs 3 items.")
    msg = only(verify("t = [1]", "", [private], setup="import torch\n_helper = len\n"))["message"]
    assert msg == "t needs 3 items.\nan assertion of the check failed (t is [1])"
    boom = check(kind="python", code="x = t.reshape(5)", message="Reshape must work.")
    msg = only(verify("t = torch.zeros(3)", "", [boom]))["message"]
    assert msg.startswith("Reshape must work.\nthe check raised RuntimeError: shape '[5]' is invalid")
    assert "t.reshape(5)" not in msg and code not in msg
    missing = only(verify("", "", [boom]))["message"]
    assert missing == "Reshape must work.\nyou did not define t"


def test_mistakes_when_code_and_failed_check_in_order_then_builtins():
    solution = "x = torch.tensor(1., requires_grad=True)\n(3 * x).backward()\n"
    wrong = "x = torch.tensor(1., requires_grad=True)\n(3 * x).backward()\n(3 * x).backward()  # again\n"
    wrong_reformatted = "x = torch.tensor(1.0,  requires_grad = True)\n# first\n(3*x).backward()\n(3*x).backward()\n"
    mistakes = [
        mistake(failed_check="grad", message="Look at x.grad."),
        mistake(when="x.grad.item() == 6", message="Two backward passes."),
        mistake(code=wrong_reformatted, message="That is the classic double backward."),
        mistake(when="x.grad.item() == 6", message="Two backward passes."),  # duplicates collapse
        mistake(when="undefined_thing > 1", message="never"),  # errors never match
        mistake(when="torch.ones(3)", message="never either"),  # ambiguous truth value: no match
        mistake(code="this is not python", message="unparsable never matches"),
    ]
    r = verify(wrong, solution, [check(kind="value", expr="x.grad", id="grad")], mistakes=mistakes)
    # authored matches lead; built-in signatures stay quiet once an author has spoken
    assert r["mistakes"] == ["Look at x.grad.", "Two backward passes.", "That is the classic double backward."]
    alone = verify(wrong, solution, [check(kind="value", expr="x.grad", id="grad")])
    # the built-in sentences: the statement the code adds to the reference's, and what it did
    assert len(alone["mistakes"]) == 2, alone["mistakes"]
    assert alone["mistakes"][0].startswith(
        "your code matches the reference's statement for statement but for one it adds"
    )
    assert alone["mistakes"][1].startswith("gradients accumulated: ")
    ok = verify(solution, solution, [check(kind="value", expr="x.grad", id="grad")], mistakes=mistakes)
    assert ok["mistakes"] == []


def test_a_crashing_check_is_a_failed_check():
    c = check(kind="value", expr="model.fc1.weight")
    r = verify("import torch\nmodel = torch.nn.Linear(2, 2)", "model = None", [c])
    assert only(r)["message"] == "model has no attribute 'fc1'"
    r = verify("t = None", "t = torch.zeros(1)", [check(kind="value", expr="t.shape")])
    assert only(r)["message"] == "t is None, so it has no attribute 'shape'"
    r = verify("def f():\n    return f()\nt = 1\n", "def f():\n    return 1\n", [check(kind="value", expr="f()")])
    assert only(r)["message"].startswith("f() recursed without end at line 2 of your code")
    r = verify("t = 1", "t = 1", [{"kind": "nonsense", "id": "x"}])
    assert only(r)["details"]["authoring_error"] is True


def test_global_torch_switches_do_not_leak_out_of_learner_code():
    code = "torch.set_grad_enabled(False)\ntorch.set_default_dtype(torch.float64)\nt = torch.zeros(1)\n"
    r = verify(code, "t = torch.zeros(1, dtype=torch.float64)", [check(kind="tensor", expr="t")])
    assert r["passed"]
    assert torch.is_grad_enabled() and torch.get_default_dtype() == torch.float32


def test_reference_prints_are_hidden_and_learner_prints_are_not(capsys):
    verify("print('mine')\nt = 1", "print('the answer is 42')\nt = 1", [check(kind="value", expr="t")])
    out = capsys.readouterr().out
    assert "mine" in out and "42" not in out


def test_injected_as_source_into_a_python_without_tutor(tmp_path):
    """The engine sends the package's files as ``ptfund_checks``: the relative imports must hold."""
    from tutor.engine.inject import checks_bootstrap_source

    payload = {
        "setup": "import torch\na = torch.arange(6.).reshape(2, 3)",
        "code": "t = a.t().contiguous()",
        "solution": "t = a.t()",
        "seed": 0,
        "device": "cpu",
        "mistakes": [],
        "checks": [check(kind="tensor", expr="t", compare=["shape", "stride"], shares_storage_with="a")],
    }
    program = (
        checks_bootstrap_source() + "\nimport json, sys\nfrom ptfund_checks import run_verification\n"
        "print(json.dumps(run_verification(json.loads(sys.argv[1]))))\n"
        "print('tutor' in sys.modules, any(m.startswith('tutor.') for m in sys.modules))\n"
    )
    script = tmp_path / "kernel.py"
    script.write_text(program)
    proc = subprocess.run(
        [sys.executable, "-I", str(script), json.dumps(payload)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    result_line, modules_line = proc.stdout.strip().splitlines()[-2:]
    assert modules_line == "False False"
    assert "t is a contiguous copy, not a view of a" in json.loads(result_line)["checks"][0]["message"]


def test_importing_the_package_does_not_import_torch():
    proc = subprocess.run(
        [sys.executable, "-c", "import sys, tutor.checks; print('torch' in sys.modules)"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert proc.stdout.strip() == "False", proc.stderr
