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


# A private copy made by warm_up, before any verification in this process (or in the fork
# server a kernel was forked from): the first verification takes it instead of making one.
# Only code that ran before that verification could reach it here, and in a fresh kernel
# none has (an attached kernel, where the learner's code runs first, is trusted no further).
_first_copy: dict | None = None


def verify(request: str, blob: str) -> dict:
    """Verify in a private copy of this library and publish the signed result (report.py).

    Called before any learner code of this verification runs, so the copy is taken from
    the library as sent."""
    import json

    from .sealed import load

    global _first_copy
    library, _first_copy = _first_copy or load(__name__), None
    return library[__name__ + ".report"].verify(request, json.loads(blob), library)


_learner = None  # the private copy's learner module, once this kernel took the learner's role


def learner_side(function: str, request: str, text: str) -> None:
    """The learner's side of a verification (learner.py), in a private copy of this library:
    the learner's code then cannot rebind what the tamper guard and the answers use.
    Every request of one verification goes to the same copy (it keeps the worlds)."""
    global _first_copy, _learner
    from .sealed import load

    if _learner is None:
        library, _first_copy = _first_copy or load(__name__), None
        _learner = library[__name__ + ".learner"]
        _learner.LIBRARY = library
    {"begin": _learner.begin, "serve": _learner.serve}[function](request, text)


def warm_up(device=None) -> None:
    """Pay torch's one-time lazy costs now (a spare kernel can call this while idle):
    the first op on the meta device imports sympy and torch._dynamo (about 1.5 s; see
    lazydynamo.py for deferring the latter), the first
    torch.load(weights_only=True) builds its unpickler, and on a CUDA or MPS ``device``
    the first operations create the GPU context and load its math libraries."""
    global _first_copy
    from .runner import warm_up as warm
    from .sealed import compile_all, load

    compile_all(__name__)
    warm(device)
    # A spare does not know its role yet: the judge's module is imported while it waits too.
    from . import judge  # noqa: F401

    if _first_copy is None:
        _first_copy = load(__name__)
