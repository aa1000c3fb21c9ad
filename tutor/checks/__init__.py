"""The check library: runs INSIDE the kernel against the learner's namespace.

It depends only on the standard library, torch and numpy, and its modules import each
other relatively, so the engine can inject its sources into a kernel that does not have
``tutor`` installed, as a package named ``ptfund_checks`` (tutor/engine/inject.py does that).

    from ptfund_checks import run_verification
    result = run_verification(payload)

Importing this package does not import torch (the UI process reads the sources to inject
them and must stay torch-free); ``run_verification`` imports the machinery on first use.
"""


def run_verification(payload: dict) -> dict:
    """Run setup + reference solution and setup + learner code, then the checks and
    mistakes of ``payload``; see runner.py for the contract."""
    from .runner import run_verification as run

    return run(payload)


def warm_up(device=None) -> None:
    """Pay torch's one-time lazy costs now (a spare kernel can call this while idle):
    the first op on the meta device imports torch._dynamo (about a second), the first
    torch.load(weights_only=True) builds its unpickler, and on a CUDA or MPS ``device``
    the first operations create the GPU context and load its math libraries."""
    from .runner import warm_up as warm

    warm(device)
