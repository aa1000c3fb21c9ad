"""What crosses between the learner's kernel and the judge (tutor/checks/wire.py): a frame
(JSON and raw storages), JSON, or one torch.save loaded with weights_only=True. Every value
must survive the trip with its type and layout; a frame that lies about its layout is refused
without reading out of bounds; and an archive's pickle may name only globals the
weights-only unpickler of the oldest supported torch (2.2) accepts, or every verification
there fails as "not plain data"."""

from __future__ import annotations

import base64
import io
import pickletools
import zipfile

import numpy as np
import pytest
import torch

from tutor.checks import wire

VALUES = [
    None,
    True,
    3,
    1.5,
    "text",
    complex(1, -2),
    b"",
    b"\x00bytes\xff",
    torch.float64,
    torch.bfloat16,
    torch.float8_e4m3fn,
    torch.Size([2, 3]),
    torch.device("cpu"),
    torch.device("meta"),
    torch.device("cuda", 1),
    [1, (2, 3)],
    {"k": [torch.device("cpu"), 2j]},
    slice(1, None, 2),
    range(3),
    {1, 2},
]


def _globals(message: str) -> set[str]:
    """The module.name of every global the pickle inside one message refers to."""
    with zipfile.ZipFile(io.BytesIO(base64.b64decode(message))) as archive:
        pickle = archive.read(next(n for n in archive.namelist() if n.endswith("data.pkl")))
    found, strings = set(), []
    for op, arg, _ in pickletools.genops(pickle):
        if op.name == "GLOBAL":
            found.add(str(arg).replace(" ", "."))
        elif op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE"):
            strings.append(arg)
        elif op.name == "STACK_GLOBAL":
            found.add(".".join(strings[-2:]))
    return found


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_a_value_comes_back_as_itself(value):
    back = wire.load(wire.encode(value))
    assert back == value and type(back) is type(value)


def test_tensors_and_arrays_come_back_with_their_layout():
    t = torch.arange(6.0).reshape(2, 3).t()
    back = wire.load(wire.encode({"t": t, "a": np.arange(4, dtype=np.int16)}))
    assert torch.equal(back["t"], t) and back["t"].stride() == (1, 3)
    assert back["a"].dtype == np.int16 and back["a"].tolist() == [0, 1, 2, 3]


def test_a_meta_tensor_comes_back_with_its_layout():
    t = torch.empty(4, 6, dtype=torch.bfloat16, device="meta")[1:, ::2]
    back = wire.load(wire.encode(t))
    assert back.is_meta and back.dtype == torch.bfloat16
    assert (back.shape, back.stride(), back.storage_offset()) == (t.shape, t.stride(), t.storage_offset())


def test_a_message_names_only_what_an_old_weights_only_unpickler_accepts():
    # torch 2.2's weights-only unpickler knows torch's tensor rebuilders, storages, dtypes,
    # Size and OrderedDict, and only some dtypes as objects; a complex number (builtins.complex), a torch.device or
    # protocol-2 bytes (_codecs.encode) make it refuse the whole message.
    # A message whose tensors a frame does not carry (a GPU's, say) goes as such an archive.
    body = {"values": VALUES, "t": torch.zeros(2, requires_grad=True), "p": torch.nn.Parameter(torch.ones(1))}
    message = wire.archive({"v": wire.WIRE_VERSION, "body": wire.Preparer()(body)})
    outside = {g for g in _globals(message) if not g.startswith("torch.") and g != "collections.OrderedDict"}
    assert not outside, outside
    assert not {"torch.device", "torch.bfloat16"} & _globals(message)


def test_a_forged_device_record_is_refused_in_one_sentence():
    body = {wire.TAG: "device", "type": "no-such-device", "index": None}
    buffer = io.BytesIO()
    torch.save({"v": wire.WIRE_VERSION, "body": body}, buffer)
    with pytest.raises(wire.WireError, match="a device torch does not know"):
        wire.load(base64.b64encode(buffer.getvalue()).decode("ascii"))


def test_several_calls_answered_in_one_message_keep_what_each_call_returned():
    # A function check's cases cross in one message (learner._calls): each answer is frozen
    # when its call returns, so a later call writing the same buffer does not reach it.
    buffer = torch.zeros(3)

    def fill(value: float):
        buffer.fill_(value)
        return buffer, buffer[1:], buffer.numpy()

    prepared = [wire.frozen(wire.Preparer({})({"value": fill(float(i))})) for i in range(3)]
    answers = wire.load(wire.encode({"answers": wire.Prepared(prepared)}), wire.Decoder())["answers"]
    for number, answer in enumerate(answers):
        whole, tail, array = answer["value"]
        assert whole.tolist() == [float(number)] * 3 and array.tolist() == [float(number)] * 3
        # Within one answer, memory shared in the learner's kernel is shared here too.
        assert tail.untyped_storage().data_ptr() == whole.untyped_storage().data_ptr()
        assert tail.storage_offset() == 1
        assert np.shares_memory(array, whole.numpy())
    # Across answers it is not: each call's answer has its own copy.
    assert answers[0]["value"][0].untyped_storage().data_ptr() != answers[1]["value"][0].untyped_storage().data_ptr()


def test_a_frozen_answer_keeps_conjugate_and_meta_tensors():
    z = torch.tensor([1 + 2j, 3 - 1j]).conj()
    meta = torch.empty(2, 3, device="meta")
    body = wire.frozen(wire.Preparer({})({"z": z, "meta": meta}))
    got = wire.load(wire.encode(wire.Prepared(body)), wire.Decoder())
    assert got["z"].tolist() == z.tolist()
    assert got["meta"].is_meta and got["meta"].shape == (2, 3)


def test_names_read_again_are_same_only_when_nothing_crossing_changed():
    # The learner's side answers a re-read of the names with "same" (the judge keeps what it
    # decoded) only when they would cross bit for bit as before, however the code wrote them.
    from tutor.checks import learner

    learner.reset()
    code = (
        "x = torch.zeros(3)\n"
        "scale = 1.0\n"
        "def bump():\n    x.add_(1)\n"
        "def poke():\n    x.numpy()[0] = 7.0\n"  # no version counter sees this one
        "def negate():\n    global scale\n    scale = -0.0\n"
        "def keep():\n    return x.sum()\n"
    )
    try:
        begun = learner._answer({"op": "begin", "world": "main", "setup": "import torch\n", "code": code, "seed": 0})
        assert begun["error"] is None
        ns = learner._state["worlds"]["main"]

        def again(after=None) -> bool:
            if after is not None:
                learner._answer({"op": "call", "target": ns[after], "args": [], "kwargs": {}})
            return "same" in learner._answer({"op": "names", "world": "main"})

        assert again() and again("keep")
        assert not again("bump") and again()
        assert not again("poke") and again()
        assert not again("negate") and again()
    finally:
        learner.reset()


def test_the_judge_reads_names_afresh_once_it_wrote_its_own_copies():
    from tutor.checks.judge import _written_here

    decoded = wire.load(wire.encode({"x": torch.zeros(3), "n": 2, "rows": [torch.ones(2)]}), wire.Decoder())
    try:
        assert not _written_here(decoded)
        decoded["rows"][0].add_(1)  # a check wrote the judge's copy of the learner's tensor
        assert _written_here(decoded)
        assert _written_here({"a": np.zeros(2)})  # arrays keep no version counter
    finally:
        wire.FACTS.clear()


def test_a_message_of_plain_values_crosses_as_json_and_comes_back_as_itself():
    # Most requests hold only numbers, strings and containers: JSON, not an archive.
    request = {"op": "ahead", "requests": [{"seed": 3, "setup": "a = 1\n", "x": -0.0, "t": (1, "é\ud800"), "m": None}]}
    text = wire.encode(request)
    assert text.startswith("{")
    back = wire.load(text)
    assert back == request and type(back["requests"][0]["t"]) is tuple
    assert str(back["requests"][0]["x"]) == "-0.0"


@pytest.mark.parametrize("value", [float("nan"), 2**70, torch.Size([2]), b"x"], ids=repr)
def test_what_json_would_not_give_back_as_itself_crosses_as_an_archive(value):
    text = wire.encode({"v": value})
    assert not text.startswith("{")
    back = wire.load(text)["v"]
    assert type(back) is type(value) and (back == value or back != back)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"v": 99, "body": 1}', "does not follow the judge's format"),
        ('{"v": 1, "body": {"~": "handle-of-mine"}}', "record"),
        ("{" * 100_000, "not plain data"),
        ('{"v": 1, "body": ' + "[" * 100 + "]" * 100 + "}", "nested too deeply"),
        ('{"v": 1, "body": ' + "[" * 100_000 + "]" * 100_000 + "}", "not plain data"),
    ],
    ids=["version", "record", "junk", "deep", "deeper than json parses"],
)
def test_a_json_message_that_breaks_the_contract_is_refused(text, said):
    with pytest.raises(wire.WireError, match=said):
        wire.load(text)


# ------------------------------------------------------------------ frames


FRAME_DTYPES = [
    torch.bool,
    torch.uint8,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.float16,
    torch.bfloat16,
    torch.float32,
    torch.float64,
    torch.complex64,
    torch.complex128,
]


@pytest.mark.parametrize("dtype", FRAME_DTYPES, ids=str)
def test_a_framed_tensor_keeps_its_values_layout_and_storage_sharing(dtype):
    base = (torch.arange(24) % 7).to(dtype).reshape(4, 6)
    view = base.t()[2:, 1:3]  # strides (1, 6), an offset, over base's storage
    text = wire.encode({"base": base, "view": view, "again": base})
    assert text.startswith(wire.FRAME_MARK)
    back = wire.load(text)
    for name, original in (("base", base), ("view", view)):
        got = back[name]
        assert type(got) is torch.Tensor and got.dtype == dtype and torch.equal(got, original)
        assert (got.shape, got.stride(), got.storage_offset()) == (
            original.shape,
            original.stride(),
            original.storage_offset(),
        )
    assert back["view"].untyped_storage().data_ptr() == back["base"].untyped_storage().data_ptr()
    assert back["again"] is back["base"]  # one tensor named twice is one tensor on arrival


def test_a_frame_keeps_what_json_alone_would_change():
    shared = {"k": [1]}
    value = {
        "tuple": (1, (2.5, "x")),
        "list": [1, [2]],
        "size": torch.Size([2, 3]),
        "floats": [float("nan"), float("inf"), -0.0, 2**70],
        "keys": {1: "int key", (2, 3): "tuple key", "\x00t": "a key like the frame's own tags"},
        "shared": shared,
        "shared again": shared,
        "meta": torch.empty(3, 4, device="meta").t(),
        "empty": torch.zeros(0, 3),
        "tensor": torch.ones(2),
    }
    framed = wire._Frame().encode({"v": wire.WIRE_VERSION, "body": value})
    assert framed is not None
    back = wire._read_frame(framed)["body"]
    assert back["tuple"] == (1, (2.5, "x")) and type(back["tuple"][1]) is tuple and type(back["list"][1]) is list
    assert type(back["size"]) is torch.Size and back["size"] == torch.Size([2, 3])
    nan, inf, zero, big = back["floats"]
    assert nan != nan and inf == float("inf") and str(zero) == "-0.0" and big == 2**70
    assert back["keys"] == value["keys"]
    assert back["shared"] is back["shared again"]
    meta = back["meta"]
    assert meta.is_meta and (meta.shape, meta.stride()) == (torch.Size([4, 3]), (1, 4))
    assert back["empty"].shape == (0, 3)


@pytest.mark.parametrize(
    "tensor",
    [
        torch.zeros(2, requires_grad=True),
        torch.nn.Parameter(torch.ones(1)),
        torch.ones(2).to_sparse(),
        torch.ones(2, dtype=torch.complex64).conj(),
    ],
    ids=["needs grad", "parameter", "sparse", "conjugate bit"],
)
def test_a_tensor_a_frame_does_not_carry_goes_as_an_archive(tensor):
    assert wire._Frame().encode({"v": wire.WIRE_VERSION, "body": {"t": tensor}}) is None


def _frame(structure, sizes, data: bytes) -> str:
    import json

    return wire.FRAME_MARK + json.dumps([structure, sizes]) + "|" + base64.b64encode(data).decode("ascii")


def _message(body):
    return {"v": wire.WIRE_VERSION, "body": body}


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (_frame(_message({"\x00t": [0, "float32", "cpu", [3], [1], 0]}), [8], bytes(8)), "reaches past its storage"),
        (_frame(_message({"\x00t": [0, "float32", "cpu", [2], [1], 1]}), [8], bytes(8)), "reaches past its storage"),
        (_frame(_message({"\x00t": [0, "float32", "cpu", [2, 2], [4, 1], 0]}), [16], bytes(16)), "past its storage"),
        (_frame(_message({"\x00t": [0, "float32", "cpu", [2], [1], -1]}), [8], bytes(8)), "layout"),
        (_frame(_message({"\x00t": [0, "float32", "cpu", [2], [-1], 0]}), [8], bytes(8)), "layout"),
        (_frame(_message({"\x00t": [0, "os.system", "cpu", [2], [1], 0]}), [8], bytes(8)), "dtype"),
        (_frame(_message({"\x00t": [0, "qint8", "cpu", [2], [1], 0]}), [8], bytes(8)), "dtype"),
        (_frame(_message({"\x00t": [0, "float32", "cuda", [2], [1], 0]}), [8], bytes(8)), "layout"),
        (_frame(_message({"\x00t": [3, "float32", "cpu", [2], [1], 0]}), [8], bytes(8)), "storage the frame"),
        (_frame(_message({"\x00t": [0, "float32", "meta", [2], [1], 0]}), [8], bytes(8)), "meta tensor with data"),
        (_frame(_message([{"\x00r": 5}]), [], b""), "never sent"),
        (_frame(_message({"\x00q": []}), [], b""), "unknown kind"),
        (_frame(_message({"a": 1, "\x00t": []}), [], b""), "record inside a mapping"),
        (_frame(_message({"\x00d": [[[1], 2]]}), [], b""), "not hashable"),
        (_frame(_message(1), [8], bytes(4)), "do not add up"),
        (_frame(_message(1), [0] * (wire.MAX_ITEMS + 1), b""), "do not add up"),
        (wire.FRAME_MARK + "[1, []]", "without its data"),
        (wire.FRAME_MARK + "not json|", "not data"),
        (wire.FRAME_MARK + "[1, []]|not base64!", "not data"),
        (_frame(_message("x"), [], b"").replace('"x"', "[" * 200 + "]" * 200), "nested too deeply"),
        (_frame({"v": 99, "body": 1}, [], b""), "does not follow the judge's format"),
    ],
    ids=[
        "too long",
        "offset past the end",
        "strides past the end",
        "negative offset",
        "negative stride",
        "not a dtype",
        "quantized",
        "a GPU in a frame",
        "no such storage",
        "meta with data",
        "a reference to nothing",
        "unknown record",
        "record among keys",
        "unhashable key",
        "sizes and data differ",
        "too many storages",
        "no data part",
        "not json",
        "not base64",
        "deep",
        "version",
    ],
)
def test_a_frame_that_breaks_the_contract_is_refused_in_one_sentence(text, said):
    with pytest.raises(wire.WireError, match=said):
        wire.load(text)


def _ring():
    ring: list = [1, 2]
    ring.append(ring)
    return ring


def _deep(levels: int):
    tree: dict = {}
    node = tree
    for _ in range(levels):
        node["child"] = {}
        node = node["child"]
    return tree


def _namespace_holding_itself():
    ns: dict = {"x": torch.ones(2)}
    ns["g"] = ns  # what ``g = globals()`` puts in a learner's names
    return ns


@pytest.mark.parametrize(
    "value, why",
    [
        (_ring(), "holds itself"),
        (_namespace_holding_itself(), "holds itself"),
        (_deep(60), "too large or too deeply nested"),
        ([[[0]]] * 3 + [list(range(wire.MAX_ITEMS + 5))], "too large to send"),
    ],
    ids=["list-in-itself", "namespace-in-itself", "dicts-60-deep", "longer-than-the-budget"],
)
def test_what_a_sender_cannot_send_whole_still_crosses_inside_an_answer(value, why):
    # An answer (the learner's names, nested as the learner's side nests them) holding a
    # value that cannot cross whole is still read: that value is one opaque record saying
    # why, and the rest arrives. Before, the judge refused the whole answer ("nested too
    # deeply"), and a correct solution that also kept such a value failed.
    names = wire.Prepared(wire.Preparer({})({"kept": value, "w": torch.arange(3.0)}))
    answer = wire.load(wire.encode({"names": names, "error": None}), wire.Decoder())
    assert answer["names"]["w"].tolist() == [0.0, 1.0, 2.0]
    found = []

    def walk(v, depth=0):
        if isinstance(v, wire.Opaque):
            found.append(v)
        elif isinstance(v, dict) and depth < 80:
            for item in v.values():
                walk(item, depth + 1)
        elif isinstance(v, list | tuple) and depth < 80:
            for item in v:
                walk(item, depth + 1)

    walk(answer["names"]["kept"])
    assert found and any(why in str(o.why) for o in found)


@pytest.mark.parametrize("requires_grad", [False, True], ids=["frame", "archive"])
def test_a_decoded_tensor_keeps_the_learners_version_counter(requires_grad):
    # A check's own expression reads h._version on the judge's copy: building it (set_) counts
    # one write there, which h never had in the learner's kernel.
    leaf = torch.ones(2, 2, requires_grad=requires_grad)
    untouched = torch.sigmoid(leaf) * 2
    written = torch.ones(3)
    written.add_(1)
    written.mul_(2)
    got = wire.load(wire.encode({"untouched": untouched, "written": written}))
    assert got["untouched"]._version == 0
    assert got["written"]._version == 2


def test_a_decoded_non_leaf_with_writes_keeps_its_count_and_stays_usable():
    # The count is set before the decoder's alias of it (a view) is made: set afterwards, it
    # reads to autograd as a write into the view's base ("a view was created in no_grad mode
    # and its base ... has been modified inplace").
    leaf = torch.ones(3, requires_grad=True)
    h = leaf * 2
    h.add_(1)
    h.mul_(3)
    with torch.no_grad():
        got = wire.load(wire.encode({"h": h}))["h"]
    assert got._version == 2 and got.requires_grad and not wire.is_leaf(got)
    (got * 2).sum().backward()
    got.detach().add_(0)


def test_a_decoded_tensor_keeps_the_ops_its_graph_was_computed_through():
    logits = torch.randn(2, 3, requires_grad=True)
    loss = torch.nn.functional.cross_entropy(logits, torch.tensor([0, 2]))
    got = wire.load(wire.encode({"loss": loss, "plain": torch.ones(2)}))
    assert wire.graph_ops(got["loss"]) == wire.graph_ops(loss)
    assert {"NllLossBackward0", "LogSoftmaxBackward0", "AccumulateGrad"} <= set(wire.graph_ops(got["loss"]))
    assert wire.graph_ops(got["plain"]) is None


def test_a_decoded_tensor_says_whether_backward_ran_through_its_graph():
    w = torch.randn(3, 2, requires_grad=True)
    x = torch.arange(12.0).reshape(4, 3)
    run, kept, retained = (x @ w).sum(), (x @ w).sum(), (x @ w).sum()
    run.backward()
    retained.backward(retain_graph=True)
    got = wire.load(wire.encode({"run": run, "kept": kept, "retained": retained, "plain": torch.ones(2)}))
    assert [wire.backpropagated(got[k]) for k in ("run", "kept", "retained", "plain")] == [True, False, False, None]
    # A forged record reads as unknown, never as run through.
    record = wire.Preparer()(kept)
    record["backpropagated"] = "yes"
    assert wire.backpropagated(wire.Decoder()(record)) is None


def test_a_typed_in_gradient_fails_backpropagated_and_says_why():
    from tutor.checks.compare import tensor_problems

    w = torch.randn(3, 2, requires_grad=True)
    x = torch.arange(12.0).reshape(4, 3)
    expected = (x @ w).sum()
    expected.backward()
    whole, detached = (x @ w).sum(), (x @ w.detach()).sum()
    said = [p.sentence for p in tensor_problems(whole, expected, "loss", ["values", "backpropagated"])]
    assert said == [
        "backward() never ran through loss's graph (the tensors its graph saved for backward are still held): call loss.backward()"
    ]
    said = [p.sentence for p in tensor_problems(detached, expected, "loss", ["backpropagated"])]
    assert len(said) == 1 and said[0].startswith("loss has no autograd graph (no grad_fn)")
    assert tensor_problems(expected, expected, "loss", ["backpropagated"]) == []


@pytest.mark.parametrize("graph", ["NllLossBackward0", {"a": 1}, ["x"] * (wire.GRAPH_NODES + 1), [1, None]])
def test_a_forged_graph_reads_as_no_ops_or_only_its_strings(graph):
    # The names are only ever compared with op names: a record that is not a list of strings
    # gives none, and nothing in it runs.
    prep = wire.Preparer()
    record = prep(torch.ones(2, requires_grad=True) * 2)
    record["graph"] = graph
    got = wire.Decoder()(record)
    assert wire.graph_ops(got) in (None, [])


def test_same_body_sees_a_change_in_any_byte_of_a_storage():
    # Storages are compared eight bytes at a time and the rest byte by byte: a change in
    # either part, and a NaN's payload, tells; an untouched copy does not.
    for size in (5, 8, 13, 64):
        t = torch.arange(size, dtype=torch.uint8)
        kept = wire.frozen(wire.Preparer({})({"t": t}))
        assert wire.same_body(kept, wire.Preparer({})({"t": t}))
        for at in {0, size // 2, size - 1}:
            changed = t.clone()
            changed[at] += 1
            assert not wire.same_body(kept, wire.Preparer({})({"t": changed})), (size, at)
    nan = torch.tensor([float("nan"), 1.0, 2.0])
    other = nan.clone()
    other.view(torch.int32)[0] ^= 1  # another NaN, other bits
    kept = wire.frozen(wire.Preparer({})({"x": nan}))
    assert not wire.same_body(kept, wire.Preparer({})({"x": other}))
