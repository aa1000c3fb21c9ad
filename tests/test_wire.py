"""What crosses between the learner's kernel and the judge (tutor/checks/wire.py): one
torch.save per message, loaded with weights_only=True. Every value must survive the trip
with its type, and the pickle may name only globals the weights-only unpickler of the
oldest supported torch (2.2) accepts, or every verification there fails as "not plain data"."""

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
    message = wire.encode(
        {"values": VALUES, "t": torch.zeros(2, requires_grad=True), "p": torch.nn.Parameter(torch.ones(1))}
    )
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
