"""The setup's private state, named by the learner's code, fails the attempt (privates.py);
an exercise's own names, a class's own fields and the learner's own private names do not."""

from __future__ import annotations

from pathlib import Path

import pytest

from tutor.checks import privates
from tutor.packs.catalog import Catalog

PRELUDE = Path(__file__).resolve().parent.parent / "lessons" / "shared" / "prelude_autograd.py"


# A setup that keeps its state under private names and attributes, as a lesson's may.
KEEPER = (
    "import torch\n"
    "_ROOTS, _FILLED = [], {}\n"
    "def _wrap():\n"
    "    backward = torch.autograd.backward\n"
    "    def remembering(*a, **k):\n"
    "        return backward(*a, **k)\n"
    "    remembering._roots, remembering._filled = _ROOTS, _FILLED\n"
    "    torch.autograd.backward = remembering\n"
    "_wrap()\n"
)


def test_a_setups_private_names_and_attributes_are_its_state():
    names, attributes = privates.of_setup(KEEPER)
    assert {"_ROOTS", "_FILLED"} <= names and {"_roots", "_filled"} <= attributes
    assert "_" not in names and "__doc__" not in attributes


def test_the_autograd_prelude_keeps_its_record_in_closures_only():
    # Bound to no name and no attribute: what reaches it goes through the interpreter.
    names, attributes = privates.of_setup(PRELUDE.read_text())
    assert names == {"_backward_ran", "_grad_from_backward", "_graphs_kept"}
    assert attributes == {"_ptfund_remembers", "_ptfund_records"}


@pytest.mark.parametrize(
    ("code", "found"),
    [
        ("_ROOTS.append(c.grad_fn)\n", ("_ROOTS", 1)),
        ("x = 1\ntorch.autograd.backward._filled.clear()\n", ("_filled", 2)),
        ("getattr(torch.autograd.backward, '_ro' + 'ots').clear()\n", ("_roots", 1)),
        ("globals()[f'_FIL{\"LED\"}'].clear()\n", ("_FILLED", 1)),
        ("c.backward()\n", None),
        ("_backward_ran(c)\n", None),  # calling a helper changes nothing it reads
    ],
)
def test_code_that_names_the_setups_state_is_found(code, found):
    assert privates.reached(code, privates.of_setup(KEEPER)) == found


@pytest.mark.parametrize(
    ("code", "found"),
    [
        ("cells = torch.autograd.backward.__closure__\n", ("__closure__", 1)),
        ("x = 1\nstate = [c.cell_contents for c in cells]\n", ("cell_contents", 2)),
        ("g = f.__globals__\n", ("__globals__", 1)),
        ("import gc\nfor o in gc.get_objects():\n    pass\n", ("get_objects", 2)),
        ("import sys\nframe = sys._getframe(1).f_back\n", ("_getframe", 2)),
        ("from inspect import currentframe\n", ("currentframe", 1)),
        ("import ctypes\n", ("ctypes", 1)),
        # Frames and their locals by way of inspect: stack(), getargvalues(), getmembers().
        ("x = 1\nimport inspect as i\nframes = i.stack()\n", ("inspect.stack", 3)),
        ("x = 1\nimport inspect\nns = inspect.getargvalues(inspect.stack()[0].frame).locals\n", ("getargvalues", 3)),
        ("from inspect import stack\n", ("inspect.stack", 1)),
        ("frames = torch.nn.modules.module.inspect.trace()\n", ("inspect.trace", 1)),
        # Reading source or a signature reaches no state: a lesson's hint prints getsource().
        ("import inspect\nprint(inspect.getsource(nn.Linear.reset_parameters))\n", None),
        ("y = torch.stack([a, b])\n", None),
        ("members = torch.nn.modules.module.inspect.getmembers(F)\n", ("getmembers", 1)),
        ("import traceback\nframes = list(traceback.walk_stack(None))\n", ("walk_stack", 2)),
        ("import sys\nsys.settrace(None)\n", ("settrace", 2)),
        ("cells = getattr(torch.autograd.backward, '__clo' + 'sure__')\n", ("__closure__", 1)),
        ("c.backward()\nimport gc\ngc.collect()\n", None),  # freeing memory is no reaching
        ("model.__dict__\nvars(model)\n", None),
    ],
)
def test_code_that_reaches_objects_through_the_interpreter_is_found(code, found):
    assert privates.internals(code) == found


def test_a_classs_own_fields_and_the_learners_own_names_are_not_the_setups():
    setup = "class Box:\n    def __init__(self):\n        self._items = []\n_start = 1\n"
    learner = "class Value:\n    def __init__(self):\n        self._items = []\n        self._prev = set()\n"
    engine = "def _backward():\n    pass\nout._backward = _backward\n"
    # The learner's engine sets ._backward on its own nodes, as the setup's engine does.
    assert (
        privates.reached("def _backward():\n    pass\nout._backward = _backward\n", privates.of_setup(engine)) is None
    )
    assert privates.of_setup(setup) == ({"_start"}, set())
    # A method the learner's own class defines is its field too, called on its own nodes.
    method = "class Value:\n    def _backward(self):\n        pass\nfor v in nodes:\n    v._backward()\n"
    assert privates.reached(method, privates.of_setup(engine)) is None
    assert privates.reached(learner, privates.of_setup(setup)) is None


def test_no_reference_or_accepted_solution_of_the_built_in_pack_names_its_setups_state():
    for _, lesson in Catalog.load().lessons():
        for exercise in lesson.exercises:
            setups = [exercise.setup, *exercise.variants]
            for code in [exercise.solution, *exercise.accepted_solutions]:
                assert privates.reached(code, privates.of_setup(*setups)) is None, exercise.id
                assert privates.internals(code) is None, exercise.id
                assert privates.runtime_routes(code) is None, exercise.id


def test_a_helpers_local_names_are_not_the_setups_state():
    setup = "def _helper(x):\n    _tmp = x * 2\n    return _tmp\n_kept = 1\ndef _count():\n    global _calls\n    _calls = 1\n"
    names, _ = privates.of_setup(setup)
    assert names == {"_kept", "_calls"}
    assert privates.reached("_tmp = 3\nprint(_tmp)\n", privates.of_setup(setup)) is None


@pytest.mark.parametrize(
    ("code", "found"),
    [
        # By text computed at run time, or text and pickles run as code: the literal rules
        # above cannot read those.
        (
            "name = ''.join(map(chr, [95, 95]))\ncells = getattr(f, name)\n",
            ("getattr with a name computed at run time", 2),
        ),
        ("setattr(f, key, 1)\n", ("setattr with a name computed at run time", 1)),
        ("get = getattr\n", ("getattr with a name computed at run time", 1)),
        ("f.__getattribute__(name)\n", ("__getattribute__", 1)),
        ("object.__getattribute__(f, name)\n", ("__getattribute__", 1)),
        ("from operator import attrgetter\n", ("attrgetter", 1)),
        ("x = vars(model)[key]\n", ("vars", 1)),
        ("held = globals()[''.join(['_', 'held'])]\n", ("globals", 1)),
        ("x = model.__dict__[key]\n", ("__dict__", 1)),
        ("eval(text)\n", ("eval", 1)),
        ("__builtins__['get' + 'attr']\n", ("__builtins__", 1)),
        ("import builtins\n", ("builtins", 1)),
        ("import pickle as pk\nobj = pk.Unpickler(f).load()\n", ("pk.Unpickler", 2)),
        ("state = torch.load(buf, weights_only=False)\n", ("weights_only=False", 1)),
        ("a = np.load(f, allow_pickle=True)\n", ("allow_pickle=True", 1)),
        ("from pickle import loads\n", ("pickle.loads", 1)),
        ("import pickle\nobj = pickle.loads(data)\n", ("pickle.loads", 2)),
        ("w = getattr(model, 'weight')\nmodel.eval()\nfast = torch.compile(model)\n", None),
        ("from torch import compile\nfast = compile(model)\nmode = getattr(model, 'eval')\n", None),
        ("eval = eval\neval(text)\n", ("eval", 1)),
        ("state = torch.load(buf)\nstate = torch.load(buf, weights_only=True)\n", None),
        ("import pickle\ntry:\n    pass\nexcept pickle.UnpicklingError:\n    pass\n", None),
        # names made of literals, one by one in a loop: written out, if not in one place
        ("for name in ('q', 'v'):\n    setattr(block, name, LoRA(getattr(block, name)))\n", None),
        ("name = 'weight'\nw = getattr(model, name)\n", None),
        ("name = 'weight'\nname = key\nw = getattr(model, name)\n", ("getattr with a name computed at run time", 3)),
    ],
)
def test_code_that_reaches_objects_by_text_computed_at_run_time_is_found(code, found):
    assert privates.runtime_routes(code) == found


@pytest.mark.parametrize(
    ("code", "setup", "found"),
    [
        ("counters['stats']['unique_graphs'] = 1\n", "from torch._dynamo.utils import counters\n", 1),
        ("import torch\nc = torch._dynamo.utils.counters\ns = c['stats']\ns['unique_graphs'] += 1\n", "", 4),
        ("from torch._dynamo.utils import counters\ncounters['aot_autograd'].update(ok=1)\n", "", 2),
        ("import torch._dynamo as d\nd.config.cache_size_limit = 3\n", "", 2),
        ("import torch\ndel torch._dynamo.utils.counters['stats']\n", "", 2),
        # calls of torch's private functions change nothing the checks read as counts
        ("import torch\ntorch._dynamo.mark_dynamic(b, 0)\ntorch._dynamo.reset()\n", "", None),
        ("import torch\nx = {}\nx['a'] = 1\nx.update(b=2)\n", "", None),
    ],
)
def test_code_that_writes_torchs_private_state_is_found(code, setup, found):
    got = privates.torch_state_writes(code, setup)
    assert (got[1] if got else None) == found, got
