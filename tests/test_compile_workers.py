"""A thread left running by torch.compile's default backend (inductor's compile workers) is
said as that, not as threads the code started and should join: the code started none."""

from __future__ import annotations

from tutor.checks.judge import _as_compile_workers

GUARD = (
    "Your code left a background thread running (ThreadPoolExecutor-1_0) while the checks called it; a result "
    "that another thread can change cannot be trusted, so this attempt fails. Join the threads you start before "
    "your code ends."
)


def test_default_backend_threads_are_said_as_compile_workers():
    for code in (
        "compiled = torch.compile(fn, dynamic=True)\n",
        "compiled = torch.compile(fn, backend='inductor')\n",
        "from torch import compile\nc = compile(fn)\n",
    ):
        said = _as_compile_workers(GUARD, code)
        assert "default backend, inductor, which left its compile workers running (ThreadPoolExecutor-1_0)" in said
        assert "Join the threads you start" not in said


def test_threads_of_the_codes_own_keep_the_guards_sentence():
    for code in (
        "compiled = torch.compile(fn, backend='eager')\nimport threading\nthreading.Thread(target=f).start()\n",
        "code = compile('1 + 1', '<s>', 'eval')\n",  # Python's own compile
        "import re\npattern = re.compile('a+')\n",
    ):
        assert _as_compile_workers(GUARD, code) == GUARD
    # any other sentence of the guard is left as it is
    other = "Your code replaced torch.equal while it ran; ..."
    assert _as_compile_workers(other, "torch.compile(fn)\n") == other
