"""DataLoader workers are processes: a kernel confined for learner code (docs/confinement.md)
still runs a DataLoader with two workers, whose tensors cross through shared memory, and
persistent workers outlive an epoch but not the kernel. Real kernel, real torch, real
worker processes (the iterable-data lesson relies on this)."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from tutor.engine import KernelSession

LOADER = textwrap.dedent(
    """
    import json, os
    import torch
    from torch.utils.data import DataLoader, IterableDataset, get_worker_info

    class Shards(IterableDataset):
        def __iter__(self):
            info = get_worker_info()
            for i in range(info.id, 9, info.num_workers):
                # a tensor, so each item crosses from the worker through shared memory
                yield torch.full((3,), float(i)), os.getpid()

    loader = DataLoader(Shards(), batch_size=None, num_workers=2, persistent_workers=True)
    epochs = [[(int(x[0]), pid) for x, pid in loader] for _ in range(2)]
    print(json.dumps({
        "values": [sorted(v for v, _ in epoch) for epoch in epochs],
        "pids": [sorted({pid for _, pid in epoch}) for epoch in epochs],
        "kernel": os.getpid(),
        "confinement": json.loads(os.environ["PTFUND_TUTOR_CONFINEMENT"]),
    }))
    """
)


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the confinement layers are Linux's")
async def test_a_dataloader_with_two_workers_runs_in_a_confined_kernel():
    session = KernelSession()  # confined for learner code, as check, grade and pack test get theirs
    await session.start()
    try:
        result = await session.execute(LOADER, timeout=120)
        assert result.error is None, result.error
        seen = json.loads(result.output.strip().splitlines()[-1])
        # the layers this platform gives were applied (whichever they are, the loader ran under them)
        assert set(seen["confinement"]) >= {"namespaces", "landlock", "rlimits"}, seen["confinement"]
        assert seen["values"] == [list(range(9)), list(range(9))]  # sharded: each item once per epoch
        first, second = seen["pids"]
        assert len(first) == 2 and seen["kernel"] not in first  # two processes besides the kernel
        assert second == first  # persistent workers served the second epoch too
        # the kernel still answers with the persistent workers alive, and then shuts down cleanly
        again = await session.execute("print(len(list(loader)))", timeout=120)
        assert again.error is None and again.output.strip() == "9", again
    finally:
        await session.shutdown()
