"""Using torch.compile is not tampering: its first use in a process wraps nn.Module's
__init__ and torch.manual_seed and starts tqdm's monitor thread (aot_eager), and the
checks' guard must tell that from learner code that patches the same things. Run in a
fresh interpreter: torch.compile changes the process it runs in for good."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import functools, torch
    from tutor.checks.guard import Snapshot
    snap = Snapshot({})
    torch.compile(lambda x: x.sin() + 1, backend="aot_eager")(torch.randn(3))
    torch.compile(torch.nn.Linear(2, 2), backend="eager")(torch.randn(1, 2))
    print("compile:", snap.changes(), snap.new_threads(grace=0.2))
    seed = torch.manual_seed

    @functools.wraps(seed)
    def fixed(_):
        return seed(0)

    torch.manual_seed = fixed
    torch.nn.Module.__init__ = lambda self, *a, **k: None
    print("patched:", snap.changes())
    """
)


@pytest.mark.slow
def test_torch_compile_is_not_tampering_but_a_patch_of_the_same_names_is():
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "compile: [] []" in r.stdout, r.stdout
    assert "patched: ['torch.manual_seed', 'torch.nn.Module.__init__']" in r.stdout, r.stdout


LOADER_SCRIPT = textwrap.dedent(
    """
    import threading, time, torch
    from torch.utils.data import DataLoader, TensorDataset
    from tutor.checks.guard import Snapshot
    snap = Snapshot({})
    loader = DataLoader(TensorDataset(torch.arange(8.0)), batch_size=2, num_workers=2, persistent_workers=True)
    it = iter(loader)
    next(it)  # an epoch cut short: the workers' queue feeders still run
    print("loader:", snap.new_threads(grace=0.2))
    threading.Thread(target=time.sleep, args=(5,), name="mine", daemon=True).start()
    print("own:", snap.new_threads(grace=0.2))
    """
)


@pytest.mark.slow
def test_a_dataloader_s_queue_feeders_are_not_the_learner_s_threads_but_a_thread_of_its_own_is():
    r = subprocess.run([sys.executable, "-c", LOADER_SCRIPT], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "loader: []" in r.stdout, r.stdout
    assert "own: ['mine']" in r.stdout, r.stdout
