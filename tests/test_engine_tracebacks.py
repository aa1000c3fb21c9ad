"""Learners' tracebacks from a real kernel: their own frames and torch's, never ipykernel's or IPython's."""

from __future__ import annotations

import pytest
import pytest_asyncio

from tutor.engine import KernelSession
from tutor.engine.tracebacks import without_kernel_frames

in_kernel = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def kernel():
    session = KernelSession()
    await session.start()
    yield session
    await session.shutdown()


def machinery(lines) -> list[str]:
    return [line for line in lines if "/ipykernel/" in line or "/IPython/" in line]


@in_kernel
@pytest.mark.slow
@pytest.mark.parametrize("code", ["input('your name? ')", "import getpass\ngetpass.getpass()"])
async def test_kernel_frames_are_not_shown(kernel, code):
    r = await kernel.execute(code)
    assert r.status == "error" and r.error is not None
    text = "\n".join(r.error.traceback)
    assert machinery(r.error.traceback) == [], text
    assert "Cell In[" in text and r.error.traceback[-1].startswith("StdinNotImplementedError")
    assert "raise StdinNotImplementedError" not in text  # the source under the dropped frame too


@in_kernel
@pytest.mark.slow
async def test_library_and_own_frames_stay(kernel):
    r = await kernel.execute(
        "import torch\ndef forward(x):\n    return torch.nn.Linear(2, 3)(x)\nforward(torch.zeros(1, 5))\n"
    )
    text = "\n".join(r.error.traceback)
    assert "forward(torch.zeros(1, 5))" in text and "return torch.nn.Linear(2, 3)(x)" in text
    assert "torch/nn/modules" in text
    assert r.error.traceback[-1].startswith("RuntimeError")


@in_kernel
@pytest.mark.slow
async def test_deep_recursion_plain_traceback_keeps_its_frames(kernel):
    r = await kernel.execute("def f(n):\n    return f(n + 1)\nf(0)\n")
    assert r.error is not None and r.error.ename == "RecursionError"
    assert any("in f" in line for line in r.error.traceback) and machinery(r.error.traceback) == []


def test_standard_library_format_is_filtered_too():
    lines = [
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/IPython/core/interactiveshell.py", line 3577, in run_code',
        "    exec(code_obj, self.user_global_ns, self.user_ns)",
        '  File "/tmp/ipykernel_1/123.py", line 2, in <module>',
        "    f(0)",
        "ValueError: x",
    ]
    assert without_kernel_frames(lines) == [lines[0], *lines[3:]]


TRAINING_INTERRUPTED = (
    "import torch\n"
    "model = torch.nn.Linear(2, 2)\n"
    "def stop(*_):\n"
    "    raise KeyboardInterrupt  # where ctrl+c lands when it arrives inside torch's forward\n"
    "model.register_forward_hook(stop)\n"
    "for step in range(3):\n"
    "    loss = model(torch.ones(1, 2)).sum()\n"
)


@in_kernel
@pytest.mark.slow
async def test_an_interrupted_run_shows_the_learners_frames_not_torchs(kernel):
    r = await kernel.execute(TRAINING_INTERRUPTED)
    assert r.status == "interrupted" and r.error is not None and r.error.ename == "KeyboardInterrupt"
    text = "\n".join(r.error.traceback)
    assert "loss = model(torch.ones(1, 2)).sum()" in text and "raise KeyboardInterrupt" in text
    assert "site-packages" not in text and "torch/nn/modules" not in text, text
    assert r.error.traceback[-1].startswith("KeyboardInterrupt")


def test_interrupted_drops_library_frames_but_an_error_keeps_them():
    lines = [
        "Traceback (most recent call last):",
        '  File "/tmp/ipykernel_1/123.py", line 7, in <module>',
        "    loss = model(x).sum()",
        '  File "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1751, in _wrapped_call_impl',
        "    return self._call_impl(*args, **kwargs)",
        "KeyboardInterrupt",
    ]
    assert without_kernel_frames(lines, interrupted=True) == [*lines[:3], lines[-1]]
    assert without_kernel_frames(lines) == lines
