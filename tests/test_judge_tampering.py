"""Tampering from the learner's kernel cannot reach the verdict: the judge decides in a kernel
that never runs learner code (docs/trust.md). Each probe is a wrong answer plus a trick of one
category of issue 21, verified through the real two-kernel path; each must fail with a
sentence that gives away neither the reference solution nor the expected values.
Real kernels, real torch."""

from __future__ import annotations

import asyncio
import textwrap

import pytest

from tutor.grading.verify import verify_in_fresh_kernel
from tutor.packs.catalog import Catalog

pytestmark = pytest.mark.slow

FUNCTION = "tensors/follow-the-input"  # a function check: the judge calls the learner's code
LEAF = "tensors/leaf-parameter"
FEATURES = "tensors/features-and-labels"  # its checks read only the learner's names
HALF = "devices-precision/half-ranges"
MLP = "modules/mlp"
BEST = "checkpoints/best-state"
NUMPY = "numpy-bridge/back-to-numpy"
STEP = "training-loop/train-step"
TWO_LEAVES = "autograd/two-leaves"

# Every value a check compares is the judge's; these helpers are what a probe uses to reach for
# the checker's objects (result dicts, the list of checks, the expected values) from inside the
# learner's kernel. Where they find nothing, the wrong answer stays wrong.
REACH = """
import gc, sys

def _flip(objects):
    for o in objects:
        if isinstance(o, dict):
            if isinstance(o.get("checks"), list):
                o["checks"].clear()
            if "passed" in o:
                o["passed"] = True
        elif isinstance(o, list) and o and all(isinstance(i, dict) and "kind" in i for i in o):
            o.clear()

def _flip_everything():
    gc.unfreeze()
    _flip(gc.get_objects())
"""


def _wrong_function() -> str:
    return "import torch\n\ndef _wrong(x):\n    return torch.cat([x, torch.ones(x.shape[0], 1)], dim=1)\n"


def _function_probe(body: str, before: str = "") -> str:
    """The wrong add_bias_column, wrapped so that ``body`` runs each time the checks call it."""
    return (
        REACH
        + _wrong_function()
        + textwrap.dedent(before)
        + "\ndef add_bias_column(x):\n"
        + textwrap.indent(textwrap.dedent(body), "    ")
        + "\n    return _wrong(x)\n"
    )


FRAMES = """
f = sys._getframe(1)
while f is not None:
    if "expected" in f.f_locals:
        return f.f_locals["expected"]
    _flip(list(f.f_locals.values()))
    f = f.f_back
"""

CTYPES = """
import ctypes
for frame in list(sys._current_frames().values()):
    f = frame
    while f is not None:
        for name in ("passed", "ok", "agree"):
            if name in f.f_locals:
                f.f_locals[name] = True
                ctypes.pythonapi.PyFrame_LocalsToFast(ctypes.py_object(f), ctypes.c_int(0))
        f = f.f_back
for o in gc.get_objects():
    if isinstance(o, dict) and "passed" in o:
        ctypes.cast(id(o), ctypes.py_object).value["passed"] = True
"""

HOOKS = {
    "setprofile": """
        def _profile(frame, event, arg):
            if event == "return" and isinstance(arg, dict) and "passed" in arg:
                arg["passed"] = True
        sys.setprofile(_profile)
        """,
    "settrace": """
        import threading
        def _trace(frame, event, arg):
            if event == "return" and isinstance(arg, dict):
                _flip([arg])
            return _trace
        sys.settrace(_trace)
        threading.settrace(_trace)
        """,
    "audit-hook": """
        _seen = [0]
        def _audit(event, args):
            if _seen[0] < 50:
                _seen[0] += 1
                _flip_everything()
        sys.addaudithook(_audit)
        """,
    "gc-callbacks": """
        gc.callbacks.append(lambda phase, info: _flip_everything())
        """,
    "thread-after-return": """
        import _thread, time
        def _later():
            for _ in range(20):
                time.sleep(0.05)
                _flip_everything()
        _thread.start_new_thread(_later, ())
        _thread.start_new_thread(time.sleep, (3,))  # C code only: no Python frame to see
        """,
}

REFERENCE_FROM_HISTORY = (
    _wrong_function()
    + """
import ast, json, linecache

add_bias_column = _wrong


def _sources():
    for src in list(get_ipython().history_manager.input_hist_raw):
        try:
            tree = ast.parse(src)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("{"):
                try:
                    yield json.loads(node.value).get("solution") or ""
                except Exception:
                    pass
    for lines in list(linecache.cache.values()):
        if len(lines) > 2 and lines[2]:
            yield "".join(lines[2])


for _src in _sources():
    if "def add_bias_column" in _src and "_sources" not in _src:
        exec(_src, globals())  # the reference, if this kernel holds it anywhere
        break
"""
)

DISGUISED_PARAMETER = """
import torch


class Parameter(torch.Tensor):
    __module__ = "torch.nn.parameter"  # passes for torch's own class

    @property
    def is_leaf(self):
        return True

    @property
    def grad(self):
        return x.sum(0)[:, None].expand(3, 2).contiguous()


w = (torch.randn(3, 2, device=DEVICE, requires_grad=True) * 0.01).as_subclass(Parameter)  # not a leaf
loss = (x @ w).sum()
loss.backward()
"""

SHADOW_ISINSTANCE = """
class _Snapshot:
    def __init__(self, values):
        self._values = values

    def tolist(self):
        return self._values


scores_np = _Snapshot(scores.detach().cpu().tolist())  # a list in disguise, not an array
isinstance = lambda *a: True
with torch.no_grad():
    scores.zero_()
"""


LYING_MODULE = """
import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self, *sizes):
        super().__init__()
        self.layers = [nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:])]
        self._twin = {}

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        for i, layer in enumerate(self.layers):
            yield f"layers.{i}.weight", layer.weight
            yield f"layers.{i}.bias", layer.bias

    def parameters(self, recurse=True):
        return (p for _, p in self.named_parameters())

    def state_dict(self, *args, **kwargs):
        return dict(self.named_parameters())

    def forward(self, x):
        x = x.flatten(1)
        for layer in self.layers[:-1]:
            x = torch.relu(layer(x))
        return self.layers[-1](x)


model = MLP(784, 128, 64, 10).to(DEVICE)
"""


def _grads_by_hand() -> str:
    return (
        "import torch, weakref\n"
        "a = torch.tensor(A, device=DEVICE, requires_grad=True)\n"
        "b = torch.tensor(B, device=DEVICE, requires_grad=True)\n"
        "c = a * b + b ** 2\n"
        "a.grad, b.grad = b.detach().clone(), (a + 2 * b).detach()\n"
    )


PROBES = {
    # 1. reaching the checker's objects through frames, the garbage collector, ctypes
    "gc-unfreeze": (FUNCTION, _function_probe("_flip_everything()", before="_flip_everything()\n")),
    "frames": (FUNCTION, _function_probe(FRAMES)),
    "ctypes": (FUNCTION, _function_probe(CTYPES)),
    # 2. hooks that act after the learner's code returned
    **{f"hook-{name}": (FUNCTION, _function_probe("pass", before=src)) for name, src in HOOKS.items()},
    # 3. disguised objects
    "tensor-subclass-as-parameter": (LEAF, DISGUISED_PARAMETER),
    "float-whose-sub-is-zero": (
        HALF,
        "import torch\n"
        "class Close(float):\n"
        "    def __sub__(self, other):\n        return 0.0\n"
        "    def __rsub__(self, other):\n        return 0.0\n"
        "    def __eq__(self, other):\n        return True\n"
        "    __hash__ = float.__hash__\n"
        "f16_max = bf16_max = Close(1.0)\n"
        "x16 = xbf = torch.zeros(3, device=DEVICE)\n"
        "safe_dtype = torch.float16\n",
    ),
    "module-whose-parameters-lie": (MLP, LYING_MODULE),
    # 4. shadowing what check expressions look up
    "shadow-torch-and-isinstance": (
        LEAF,
        "import torch as _torch\n"
        "w = _torch.randn(3, 2, device=DEVICE, requires_grad=True) * 0.01\n"
        "loss = (x @ w).sum()\n"
        "loss.backward()\n"
        "class _Yes:\n"
        "    def __getattr__(self, name):\n        return lambda *a, **k: True\n"
        "torch = _Yes()\n"
        "isinstance = lambda *a: True\n"
        "__builtins__ = {'isinstance': isinstance, 'len': lambda *a: 0}\n",
    ),
    "shadow-isinstance": (NUMPY, SHADOW_ISINSTANCE),
    "shadow-setup-helper": (BEST, lambda ex: _live_snapshot(ex)),
    # the helper's name still holds the setup's function, whose code was swapped in place
    "patch-setup-helper-code": (
        BEST,
        lambda ex: (
            ex.solution
            + "\nbest_state = model.state_dict()\n"
            + "shares_memory_with_model.__code__ = (lambda state: False).__code__\n"
        ),
    ),
    "patch-setup-helper-hides-a-tensor": (
        STEP,
        lambda ex: (
            ex.solution.replace("return loss.item()", "return loss")
            + "\n_returned.__code__ = (lambda step, _kept=0.5: _kept).__code__\n"
        ),
    ),
    # The state a setup helper reads, changed rather than the helper: gradients typed in, then
    # written into what the helper remembers of the backward() calls.
    # The prelude keeps that state in closure cells, bound to no name: reached through them.
    "write-setup-helper-state": (
        TWO_LEAVES,
        _grads_by_hand() + "backward = torch.autograd.backward\n"
        "state = dict(zip(backward.__code__.co_freevars, [c.cell_contents for c in backward.__closure__]))\n"
        "state['roots'].append(c.grad_fn)\n"
        "for t in (a, b):\n"
        "    state['filled'][id(t)] = (weakref.ref(t), weakref.ref(t.grad), t.grad._version)\n",
    ),
    "write-setup-helper-state-by-text": (
        TWO_LEAVES,
        _grads_by_hand() + "backward = torch.autograd.backward\n"
        "cells = getattr(backward, '__clo' + 'sure__')\n"
        "state = dict(zip(backward.__code__.co_freevars, [getattr(c, 'cell_' + 'contents') for c in cells]))\n"
        "state['roots'].append(c.grad_fn)\n"
        "for t in (a, b):\n"
        "    state['filled'][id(t)] = (weakref.ref(t), weakref.ref(t.grad), t.grad._version)\n",
    ),
    "write-setup-helper-state-through-gc": (
        TWO_LEAVES,
        _grads_by_hand() + "import collections, gc\n"
        "gc.unfreeze()\n"
        "for o in gc.get_objects():\n"
        "    if type(o) is collections.deque and o.maxlen == 32:\n"
        "        o.append(c.grad_fn)\n"
        "    elif type(o) is collections.OrderedDict:\n"
        "        for t in (a, b):\n"
        "            o[id(t)] = (weakref.ref(t), weakref.ref(t.grad), t.grad._version)\n",
    ),
    # The same cells by names made at run time, which no rule reading literal text sees.
    "write-setup-helper-state-by-computed-text": (
        TWO_LEAVES,
        _grads_by_hand() + "backward = torch.autograd.backward\n"
        "closure = ''.join(map(chr, [95, 95, 99, 108, 111, 115, 117, 114, 101, 95, 95]))\n"
        "contents = ''.join(map(chr, [99, 101, 108, 108, 95, 99, 111, 110, 116, 101, 110, 116, 115]))\n"
        "for v in (getattr(cell, contents) for cell in getattr(backward, closure)):\n"
        "    if type(v).__name__ == 'deque':\n"
        "        v.append(c.grad_fn)\n"
        "    elif type(v).__name__ == 'OrderedDict':  # what backward() filled, and which nodes it reached\n"
        "        v[id(c.grad_fn)] = c.grad_fn\n"
        "        for t in (a, b):\n"
        "            v[id(t)] = (weakref.ref(t), weakref.ref(t.grad), t.grad._version, t.grad.clone())\n",
    ),
    # The prelude's record of backward() calls, reached from a hook through the frames that
    # inspect gives and their locals (no frame attribute named), then edited to vouch for
    # gradients typed in.
    "write-setup-helper-state-through-inspect": (
        TWO_LEAVES,
        _grads_by_hand() + "import inspect\n"
        "box = {}\n"
        "def spy(g):\n"
        "    for info in inspect.stack():\n"
        "        found = inspect.getargvalues(info.frame).locals\n"
        "        if 'filled' in found and 'roots' in found:\n"
        "            box.update(found)\n"
        "    return g\n"
        "d = torch.zeros((), requires_grad=True)\n"
        "d.register_hook(spy)\n"
        "(d * 1.0).backward()\n"
        "box['roots'].append(c.grad_fn)\n"
        "for t in (a, b):\n"
        "    box['filled'][id(t)] = (weakref.ref(t), weakref.ref(t.grad), t.grad._version, t.grad.clone())\n",
    ),
    # The expected gradients copied out of the code's own namespace, found through its frame
    # without a name: they are the judge's alone (a judge setup), so there is nothing to find.
    "copy-expected-values-through-frames": (
        "numpy-parity/grad-parity",
        "import inspect\n"
        "import numpy as np\n"
        "import torch\n"
        "found = inspect.getargvalues(inspect.stack()[0].frame).locals\n"
        "picked = {k[1:]: v for k, v in list(found.items()) if k[:2] == '_d' and len(k) == 3}\n"
        "dW_np = np.array(picked.get('dW', np.zeros_like(W)))\n"
        "db_np = np.array(picked.get('db', np.zeros_like(b)))\n"
        "W_t = torch.from_numpy(W).requires_grad_()\n"
        "b_t = torch.from_numpy(b).requires_grad_()\n"
        "loss_t = ((torch.from_numpy(X) @ W_t + b_t - torch.from_numpy(Y)) ** 2).mean()\n"
        "loss_t.backward()\n",
    ),
    # The answer asked of a setup helper the checks compare with: such helpers are the
    # judge's alone (a judge setup), so the name means nothing where the code runs.
    "call-the-checks-own-helper": (
        "optimizers/adamw-by-hand",
        "def adamw_step(p, grad, m, v, t, lr, wd, beta1=0.9, beta2=0.999, eps=1e-8):\n"
        "    return torch_trajectory()[t - 1].clone(), m.clone(), v.clone()\n",
    ),
    # Counters a check reads after calling the code, written by the code: a block's run count
    # (kept by the setup, not on the block), torch.compile's counters (torch's private state).
    "write-the-counters-a-check-reads": (
        "memory-levers/checkpoint-blocks",
        "def forward(blocks, x):\n"
        "    for block in blocks:\n"
        "        x = block(x)\n"
        "    for block in reversed(list(blocks)):\n"
        "        block.calls += 1\n"
        "    return x\n",
    ),
    # Gradients typed in, then a backward() from a root that goes through c's graph with
    # weight 0: only a gradient other than 0 reaching c counts as backpropagating from it.
    "backward-through-a-zero-weighted-root": (
        TWO_LEAVES,
        "import torch\n"
        "a = torch.tensor(A, device=DEVICE, requires_grad=True)\n"
        "b = torch.tensor(B, device=DEVICE, requires_grad=True)\n"
        "c = a * b + b ** 2\n"
        "(a * b.detach() + b * (a.detach() + 2 * b.detach()) + 0 * c).backward()\n",
    ),
    # A gradient typed in by its formula in a lesson whose setup keeps no record of
    # backward(): the loss's graph, which backward() would have freed, is still whole.
    "gradient-typed-in-with-the-graph-left-whole": (
        LEAF,
        "import torch\n"
        "w = (torch.randn(3, 2, device=DEVICE) * 0.01).requires_grad_()\n"
        "loss = (x @ w).sum()\n"
        "w.grad = x.sum(0)[:, None].expand(3, 2).clone()\n",
    ),
    # Floats in history as asked, while every step's graph is kept alive in a list of its own.
    "graphs-kept-beside-the-floats": (
        "graph-lifetime/log-losses",
        "history, _kept = [], []\n"
        "for xb, yb in batches:\n"
        "    loss = ((xb @ w - yb) ** 2).mean()\n"
        "    loss.backward(retain_graph=True)\n"
        "    with torch.no_grad():\n"
        "        w -= 0.1 * w.grad\n"
        "    w.grad = None\n"
        "    _kept.append(loss)\n"
        "    history.append(loss.item())\n",
    ),
    "write-torch-compile-counters": (
        "compile/one-graph-all-sizes",
        "def run_all(fn, batches):\n"
        "    outs = [fn(b) for b in batches]\n"
        "    counters['stats']['unique_graphs'] = 1\n"
        "    return outs\n",
    ),
    # New parameters no optimizer holds, and the setup's record of what opt holds rewritten
    # through a key made at run time.
    "write-setup-state-by-a-computed-key": (
        "linear-init/port-weights",
        "layer.weight = nn.Parameter(W.T.clone())\n"
        "layer.bias = nn.Parameter(b.clone())\n"
        "globals()[''.join(['_', 'held'])][:] = [layer.weight, layer.bias]\n",
    ),
    # A real backward() through c fills the .grad tensors; the wanted values are then written
    # through .data, which leaves their version counters as they were.
    "write-grads-past-the-version-counter": (
        TWO_LEAVES,
        "import torch\n"
        "a = torch.tensor(A, device=DEVICE, requires_grad=True)\n"
        "b = torch.tensor(B, device=DEVICE, requires_grad=True)\n"
        "c = a * b + b ** 2\n"
        "(c * 0).backward()\n"
        "a.grad.data.copy_(b.detach())\n"
        "b.grad.data.copy_((a + 2 * b).detach())\n",
    ),
    # 5. patching what the checker's own code would use
    "patch-copy-deepcopy": (MLP, lambda ex: _deepcopy_is_mine(ex)),
    "patch-meta-path": (
        FUNCTION,
        _function_probe(
            "pass",
            before="""
            import importlib.abc, importlib.machinery, types
            class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
                def find_spec(self, name, path=None, target=None):
                    if name.startswith(("ptfund_checks", "torch.testing")):
                        return importlib.machinery.ModuleSpec(name, self)
                def create_module(self, spec):
                    return None
                def exec_module(self, module):
                    module.__getattr__ = lambda name: (lambda *a, **k: {"passed": True, "checks": []})
            sys.meta_path.insert(0, _Finder())
            for _name in [n for n in sys.modules if n.startswith("ptfund_checks")]:
                del sys.modules[_name]
            """,
        ),
    ),
    # 6. prompting the host through the kernel's own input machinery (the relay's channel)
    "prompt-the-host-first": (
        FUNCTION,
        "from IPython import get_ipython\n"
        "get_ipython().kernel.raw_input('ptfund-learner:0\\nforged')\n"
        + _wrong_function()
        + "add_bias_column = _wrong\n",
    ),
    "prompt-the-host-in-a-call": (
        FUNCTION,
        _function_probe("from IPython import get_ipython\nget_ipython().kernel.raw_input('ptfund-learner:0\\nforged')"),
    ),
    "patch-torch-library-equal": (
        FUNCTION,
        _function_probe(
            "pass",
            before="""
            import torch
            _lib = torch.library.Library("aten", "IMPL")
            for _op in ("equal", "allclose", "isclose", "eq.Tensor", "sub.Tensor"):
                try:
                    _lib.impl(_op, lambda *a, **k: True, "CPU")
                except Exception:
                    pass
            """,
        ),
    ),
    # 6. reading the reference solution from IPython's history or linecache
    "read-history-and-linecache": (FUNCTION, REFERENCE_FROM_HISTORY),
    # 7. steering the device run: a read of a DEVICE tensor's number, which meta cannot make,
    # used to stop it before it saw features left on the CPU
    "stop-the-device-run-with-a-read": (
        "tensors/features-and-labels",
        "import torch\n"
        "torch.zeros((), device=DEVICE).item()\n"
        "features = torch.tensor(rows, dtype=torch.float32)\n"
        "labels = torch.tensor(classes, device=DEVICE)\n",
    ),
}


def _deepcopy_is_mine(exercise) -> str:
    # The reference without its ReLUs; a check's copy of the reference model is then this model.
    code = exercise.solution.replace("torch.relu(layer(x))", "layer(x)")
    assert code != exercise.solution
    return code + "\nimport copy\ncopy.deepcopy = lambda value, memo=None: model\n"


def _live_snapshot(exercise) -> str:
    # The reference, then best_state is made the model's live tensors; the helper that would tell says no.
    return (
        exercise.solution
        + "\nbest_state = model.state_dict()\n"
        + "def shares_memory_with_model(state):\n    return False\n"
    )


# What the verdict says: the wrong answer's own failure where the trick reached nothing,
# else what the code did.
WRONG_ANSWER = "add_bias_column fails for x of shape"
SAYS = {
    **{name: WRONG_ANSWER for name in ("gc-unfreeze", "frames", "ctypes", "patch-torch-library-equal")},
    **{f"hook-{name}": WRONG_ANSWER for name in ("setprofile", "settrace", "audit-hook")},
    # Rewriting objects from inside a collection can take the kernel down: that is said too.
    "hook-gc-callbacks": (WRONG_ANSWER, "Your code crashed the Python kernel"),
    "read-history-and-linecache": WRONG_ANSWER,
    "hook-thread-after-return": "left a background thread running",
    "tensor-subclass-as-parameter": "w is a Parameter, a subclass of torch.Tensor",
    "float-whose-sub-is-zero": "f16_max is a Close, a subclass of float",
    "module-whose-parameters-lie": "model has 0 parameters, expected 109,386",
    "shadow-torch-and-isinstance": "w.is_leaf is False, expected True",
    "shadow-isinstance": "scores_np should be a NumPy array",
    "shadow-setup-helper": "Your code replaced the exercise's own helper shares_memory_with_model",
    "patch-setup-helper-code": "Your code changed the exercise's own helper shares_memory_with_model in place",
    "patch-setup-helper-hides-a-tensor": "Your code changed the exercise's own helper _returned in place",
    **{
        f"write-setup-helper-state{how}": "which reaches objects through the interpreter"
        for how in ("", "-by-text", "-through-gc")
    },
    # The record of which nodes a gradient reached lives in a closure of its own, which this
    # probe does not reach: its typed gradients fail on their merits, or the text is refused.
    "write-setup-helper-state-by-computed-text": (
        "getattr with a name computed at run time (line 9)",
        "a.grad and b.grad are what c.backward() left is False",
    ),
    "write-setup-helper-state-through-inspect": "Your code uses inspect",
    # numpy-parity's checks read the autograd prelude's record: reaching through frames is refused first
    "copy-expected-values-through-frames": (
        "dW_np should be the gradient of the mean squared error",
        "which reaches objects through the interpreter",
    ),
    "write-grads-past-the-version-counter": "a.grad and b.grad are what c.backward() left is False",
    "write-setup-state-by-a-computed-key": "Your code uses globals (line 3)",
    "patch-copy-deepcopy": "model(x) differs from the expected forward pass",
    "prompt-the-host-first": "Your code sent the checker a prompt of its own",
    "prompt-the-host-in-a-call": "Your code sent the checker a prompt of its own",
    # The learner's side answers from the copy it loaded before the code ran: replacing the
    # modules then changes nothing, and the code (which implements nothing) fails on its merits.
    "patch-meta-path": ("The kernel running your code stopped answering the checker", "add_bias_column fails for"),
    "stop-the-device-run-with-a-read": "features is on cpu, expected DEVICE",
    "call-the-checks-own-helper": "name 'torch_trajectory' is not defined",
    "write-the-counters-a-check-reads": "'Block' object has no attribute 'calls'",
    # the batches run eagerly, which a check sees before the counters are read
    "write-torch-compile-counters": (
        "Your code changes torch._dynamo.utils.counters (line 3)",
        "Every batch must go through the compiled function",
    ),
    "backward-through-a-zero-weighted-root": "a.grad and b.grad are what c.backward() left is False",
    "gradient-typed-in-with-the-graph-left-whole": "backward() never ran through loss's graph",
    "graphs-kept-beside-the-floats": "your code keeps graphs alive after it ran",
}


@pytest.fixture(scope="module")
def catalog():
    return Catalog.load()


def verify(catalog, target: str, code: str):
    return asyncio.run(verify_in_fresh_kernel(catalog.find_exercise(target).exercise, code))


def secrets_of(exercise, code: str) -> list[str]:
    """Lines of the reference solution the probe does not hold: none may reach what the learner reads."""
    lines = {line.strip() for line in exercise.solution.splitlines()}
    return sorted(line for line in lines if len(line) >= 16 and line not in code and not line.startswith("#"))


@pytest.mark.parametrize("probe", list(PROBES))
def test_tampering_fails_and_gives_nothing_away(catalog, probe):
    target, code = PROBES[probe]
    exercise = catalog.find_exercise(target).exercise
    code = code if isinstance(code, str) else code(exercise)
    verdict = verify(catalog, target, code)
    shown = verdict.feedback() + "\n" + verdict.output
    assert not verdict.passed, shown
    says = SAYS[probe] if isinstance(SAYS[probe], tuple) else (SAYS[probe],)
    assert verdict.status in ("fail", "error") or (verdict.status == "crashed" and probe == "hook-gc-callbacks"), shown
    assert any(sentence in verdict.feedback() for sentence in says), shown
    for secret in secrets_of(exercise, code):
        assert secret not in shown, secret


def test_copyreg_cannot_make_the_judge_run_code(catalog, tmp_path):
    # The learner's kernel chooses the bytes it sends: a tensor pickled as a call of eval. The
    # judge loads answers with weights_only=True, so the call is refused, never made.
    marker = tmp_path / "judge-ran-it"
    code = _function_probe(
        "pass",
        before=f"""
        import copyreg, torch
        copyreg.pickle(torch.Tensor, lambda t: (eval, ("__import__('pathlib').Path({str(marker)!r}).touch()",)))
        """,
    )
    verdict = verify(catalog, FUNCTION, code)
    assert not verdict.passed, verdict.feedback()
    assert verdict.status in ("fail", "error"), verdict.feedback()
    assert not marker.exists()


def test_the_learners_kernel_holds_no_reference(catalog):
    """The reference solution's text is nowhere the learner's code can look: not in IPython's
    history, linecache, the namespace's globals, any loaded module or any object the garbage
    collector tracks."""
    exercise = catalog.find_exercise(FUNCTION).exercise
    assert "x.new_ones(x.shape[0], 1)" in exercise.solution  # what the search below looks for
    search = textwrap.dedent(
        """
        def _search():
            import gc, linecache, sys

            needle = "x.new_" + "ones(x.shape[0], 1)"  # built here: this cell's text does not hold it
            found = []
            ip = get_ipython()
            history = list(ip.history_manager.input_hist_raw) + list(globals().get("In", []))
            if any(needle in s for s in history):
                found.append("history")
            for key, lines in list(linecache.cache.items()):
                if len(lines) > 2 and lines[2] and needle in "".join(lines[2]):
                    found.append(f"linecache {key}")

            def holds(value):
                if isinstance(value, str):
                    return needle in value
                if isinstance(value, dict):
                    return any(isinstance(v, str) and needle in v for v in list(value.values()))
                if isinstance(value, (list, tuple)):
                    return any(isinstance(v, str) and needle in v for v in value)
                return False

            if any(holds(v) for v in list(globals().values())):
                found.append("globals")
            for name, module in list(sys.modules.items()):
                if holds(getattr(module, "__dict__", {})):
                    found.append(f"module {name}")
            gc.unfreeze()
            if any(holds(o) for o in gc.get_objects()):
                found.append("gc")
            print("SEARCHED", len(history), len(linecache.cache), len(sys.modules))
            for where in found:
                print("FOUND", where)


        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # reading every module's attributes wakes deprecations
            _search()
        """
    )
    verdict = verify(catalog, FUNCTION, search + _wrong_function() + "add_bias_column = _wrong\n")
    assert "SEARCHED" in verdict.output, verdict.output
    assert "FOUND" not in verdict.output, verdict.output
    assert not verdict.passed


def test_a_right_answer_still_passes(catalog):
    # The probes above fail for what they do, not because the judged path fails everything.
    exercise = catalog.find_exercise(FUNCTION).exercise
    verdict = verify(catalog, FUNCTION, exercise.solution)
    assert verdict.passed, verdict.feedback()


@pytest.mark.parametrize(
    "kept",
    ["g = globals()", "ring = [1]\nring.append(ring)", "nested = [0]\nfor _ in range(40):\n    nested = [nested]"],
    ids=["globals", "list-in-itself", "40-deep"],
)
def test_a_right_answer_that_also_keeps_what_cannot_cross_whole_still_passes(catalog, kept):
    # The learner's names cross to the judge after the code ran: a value no check reads that
    # cannot cross whole (the namespace itself, a cycle, a deep nest) crosses as an opaque
    # record, and the rest is judged. Before, the whole answer was refused as "not data".
    # (an exercise whose checks read no state its setup keeps: where they do, globals() in a
    # passing attempt is refused, as a way to reach that state by a key made at run time)
    exercise = catalog.find_exercise(FEATURES).exercise
    verdict = verify(catalog, FEATURES, exercise.solution + kept + "\n")
    assert verdict.passed, verdict.feedback()


def test_rebinding_a_helper_through_globals_is_told_as_that(catalog):
    # Through a dict held in a name, under a key computed at run time: the judge still sees
    # the helper rebound, and says so (not that the kernel sent something that is not data).
    exercise = catalog.find_exercise(TWO_LEAVES).exercise
    code = exercise.solution.replace("c.backward(retain_graph=True)", "") + textwrap.dedent(
        """
        g = globals()
        g["_grad_" + "from_backward"] = lambda t: True
        g["_backward" + "_ran"] = lambda t: True
        a.grad = b.detach().clone()
        b.grad = (a + 2 * b).detach().clone()
        """
    )
    verdict = verify(catalog, TWO_LEAVES, code)
    assert not verdict.passed
    assert "replaced the exercise's own helper" in verdict.feedback(), verdict.feedback()


def test_probes_name_real_exercises(catalog):
    for target, _ in PROBES.values():
        assert catalog.find_exercise(target) is not None, target
