"""The pipe between a verification's two kernels (tutor/checks/pipe.py, tutor/grading/pipe.py):
requests and answers as frames over 127.0.0.1, the host copying bytes it never reads.

First each end on its own (real sockets, no kernel), then real kernels: the same verdicts
as through the host's relay, and learner code that writes to the pipe, closes it or lets
it hang gets a sentence that says so."""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import threading

import pytest
from judge_exercises import BUMP

from tutor.checks import pipe
from tutor.grading import judging
from tutor.grading.pipe import Pipe, connect_end
from tutor.grading.verify import verify_in_fresh_kernel
from tutor.packs.catalog import Catalog

TOKEN = "a" * 32


def _frame(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">I", len(data)) + data


def _host_side(end: pipe.End, token: str = TOKEN) -> socket.socket:
    """Connect to ``end`` as the host does (the test then plays the other kernel)."""
    return connect_end(end.port, token)


def test_an_end_takes_only_the_connection_that_shows_its_token():
    end = pipe.End(TOKEN)
    intruder = socket.create_connection(("127.0.0.1", end.port))
    intruder.sendall(b"b" * 32)
    host = _host_side(end)
    try:
        assert end.accept(wait=5)
        assert intruder.recv(10) == b""  # the intruder was hung up on
        host.sendall(_frame("req\nbody"))
        assert end.receive(5) == "req\nbody"
    finally:
        end.close()
        intruder.close()
        host.close()


def test_an_end_gives_up_when_nobody_connects():
    end = pipe.End(TOKEN)
    try:
        assert not end.accept(wait=0.2)
    finally:
        end.close()


@pytest.mark.parametrize(
    ("sent", "why"),
    [
        (struct.pack(">I", pipe.MAX_FRAME + 1), "more than"),
        (struct.pack(">I", 10) + b"short", "cut short"),
        (struct.pack(">I", 2) + b"\xff\xfe", "not UTF-8"),
    ],
)
def test_what_is_not_a_frame_of_text_is_garbled(sent, why):
    end = pipe.End(TOKEN)
    host = _host_side(end)
    try:
        assert end.accept(wait=5)
        host.sendall(sent)
        host.shutdown(socket.SHUT_WR)
        with pytest.raises(pipe.Garbled, match=why):
            while end.receive(5) is not None:
                pass
    finally:
        end.close()
        host.close()


def test_a_big_answer_and_a_big_request_cross_at_once_without_blocking():
    """Both kernels may write more than a socket buffer holds at the same time (a batch's
    answers, a request with large inputs): each end reads while it writes."""
    ends = [pipe.End(TOKEN), pipe.End(TOKEN)]
    joined = Pipe(_host_side(ends[0]), _host_side(ends[1]))
    big = "x" * (8 << 20)
    got: list = []
    try:
        assert ends[0].accept(5) and ends[1].accept(5)
        other = threading.Thread(target=lambda: (ends[1].send(big), got.append(ends[1].receive(10))))
        other.start()
        ends[0].send(big)
        got.append(ends[0].receive(10))
        other.join(10)
        assert [len(g) for g in got] == [len(big), len(big)]
    finally:
        joined.close()
        for end in ends:
            end.close()


class _Learner:
    """Plays the learner's kernel at the other end of a Piped: answers each request it reads."""

    def __init__(self, sock: socket.socket, answers):
        self.sock, self.answers, self.read = sock, answers, []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        buffer = b""
        while True:
            data = self.sock.recv(1 << 16)
            if not data:
                return
            buffer += data
            while len(buffer) >= 4 and len(buffer) >= 4 + struct.unpack(">I", buffer[:4])[0]:
                size = struct.unpack(">I", buffer[:4])[0]
                frame, buffer = buffer[4 : 4 + size].decode(), buffer[4 + size :]
                self.read.append(frame)
                for reply in self.answers(frame):
                    self.sock.sendall(_frame(reply))


def _piped(answers, host=None):
    end = pipe.End(TOKEN)
    sock = _host_side(end)
    sock.sendall(_frame("ptfund-learner:begin-id\nthe begin's answer"))
    asked_host: list = []

    def ask_host(text: str) -> str:
        asked_host.append(json.loads(text.partition("\n")[0]))
        return host(asked_host[-1]["op"]) if host else 'fault:{"status": "crashed", "message": ""}'

    return pipe.Piped(end, ask_host, "begin-id"), _Learner(sock, answers), asked_host, sock


def test_piped_answers_requests_and_keeps_the_runs_ahead_until_asked_for():
    def answers(frame: str):
        request, _, body = frame.partition("\n")
        if body.startswith("ahead"):
            return [f"ptfund-learner:{request}/{i}\nworld {i}" for i in range(2)]
        return [f"ptfund-learner:{request}\nanswer to {body}"]

    piped, _learner, asked_host, sock = _piped(answers)
    try:
        assert piped('{"op": "begin", "world": "main"}\nbegin') == "ok:the begin's answer"
        assert piped('{"op": "ahead", "count": 2}\nahead') == "ok:"
        assert piped('{"op": "names"}\nnames') == "ok:answer to names"
        assert piped('{"op": "ahead-answer", "index": 1}\n') == "ok:world 1"
        assert piped('{"op": "ahead-answer", "index": 0}\n') == "ok:world 0"
        assert piped('{"op": "ahead-answer", "index": 2}\n').startswith("fault:")  # never started
        assert asked_host == []  # the host was asked nothing
    finally:
        piped.close()
        sock.close()


def test_piped_asks_the_host_when_the_learner_side_ends_or_sends_no_answer():
    faults = {"gone": 'fault:{"status": "crashed", "message": "it died"}', "garbled": 'fault:{"status": "silent"}'}
    piped, _learner, asked_host, sock = _piped(lambda frame: ["ptfund-learner:nobody-asked\nforged"], faults.get)
    try:
        assert piped('{"op": "begin", "world": "main"}\nbegin').startswith("ok:")
        assert piped('{"op": "names"}\nnames') == faults["garbled"]
        assert asked_host[-1]["op"] == "garbled" and "no request" in asked_host[-1]["why"]
    finally:
        piped.close()
        sock.close()
    piped, _learner, asked_host, sock = _piped(lambda frame: [], faults.get)
    try:
        assert piped('{"op": "begin", "world": "main"}\nbegin').startswith("ok:")
        sock.shutdown(socket.SHUT_WR)  # the learner's kernel died
        assert piped('{"op": "names"}\nnames') == faults["gone"]
        assert [a["op"] for a in asked_host] == ["gone"]
    finally:
        piped.close()
        sock.close()


def test_piped_asks_the_host_while_an_answer_is_slow(monkeypatch):
    monkeypatch.setattr(pipe.Piped, "POLL", 0.05)
    told = {"alive": 'fault:{"status": "timeout", "message": ""}'}
    piped, _learner, asked_host, sock = _piped(lambda frame: [], told.get)
    try:
        assert piped('{"op": "begin", "world": "main"}\nbegin').startswith("ok:")
        assert piped('{"op": "names"}\nnames') == told["alive"]
        assert [a["op"] for a in asked_host] == ["alive"]
    finally:
        piped.close()
        sock.close()


def test_the_host_relays_prompts_when_the_learners_kernel_could_not_listen():
    """Offered the pipe, a learner's kernel that cannot listen answers with a prompt as
    before; the judge's request for the pipe then gets that answer, relayed."""

    async def scenario():
        relay = judging._Relay("begin-id", 1e12, lambda s: None, 10.0, pipe_tokens=("a" * 32, "b" * 32))
        relay.learner_run = asyncio.get_running_loop().create_future()
        learner = asyncio.ensure_future(relay.learner_prompt("ptfund-learner:begin-id\nthe answer"))
        judged = await relay(judging.PROMPT + json.dumps({"op": "begin", "world": "main", "pipe": 1, "runs": 0}) + "\n")
        relay.finish()
        assert await learner == "end"
        return judged

    assert asyncio.run(scenario()) == "ok:the answer"


# ------------------------------------------------------------------ real kernels


def _recorded(monkeypatch) -> tuple[list[str], list[str]]:
    """The ops of what the judge asks the host, and the heads of the learner's prompts."""
    ops: list[str] = []
    heads: list[str] = []
    judge_prompt, learner_prompt = judging._Relay.__call__, judging._Relay.learner_prompt

    async def judged(self, prompt: str) -> str:
        ops.append(str(json.loads(prompt.removeprefix(judging.PROMPT).partition("\n")[0]).get("op")))
        return await judge_prompt(self, prompt)

    async def learned(self, prompt: str):
        heads.append(prompt.partition("\n")[0].split(" ", 1)[-1])
        return await learner_prompt(self, prompt)

    monkeypatch.setattr(judging._Relay, "__call__", judged)
    monkeypatch.setattr(judging._Relay, "learner_prompt", learned)
    return ops, heads


@pytest.mark.slow
def test_local_kernels_talk_over_the_pipe_and_the_host_relays_one_prompt_each(monkeypatch):
    ops, heads = _recorded(monkeypatch)
    exercise = Catalog.load().find_exercise("modules/mlp").exercise
    verdict = asyncio.run(verify_in_fresh_kernel(exercise, exercise.solution))
    assert verdict.status == "pass", verdict.lines()
    assert ops == ["begin"], ops  # every call, names and further world went over the pipe
    assert len(heads) == 1 and heads[0].startswith("pipe "), heads


@pytest.mark.slow
@pytest.mark.parametrize("which", [None, 0, 1])
def test_the_pipe_gives_the_relays_verdicts(monkeypatch, which):
    exercise = Catalog.load().find_exercise("modules/mlp").exercise
    code = exercise.solution if which is None else exercise.wrong_solutions[which].code
    piped = asyncio.run(verify_in_fresh_kernel(exercise, code))
    monkeypatch.setenv(judging.NO_PIPE_ENV, "1")
    relayed = asyncio.run(verify_in_fresh_kernel(exercise, code))
    assert piped.status == relayed.status
    assert piped.lines() == relayed.lines()


# The judge calls bump() (BUMP); the learner's bump does something to the pipe's end first.
END_OF_PIPE = (
    "import gc, socket, time\n"
    "n = 0\n"
    "def bump():\n"
    "    global n\n"
    "    n += 1\n"
    "    end = next(o for o in gc.get_objects() if type(o).__name__ == 'End' and getattr(o, '_sock', None))\n"
)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("action", "status", "said"),
    [
        # Bytes that are no answer to anything the judge asked.
        ("    end._sock.sendall(b'\\x00\\x00\\x00\\x05hello')\n", "error", "not an answer to its requests"),
        # An answer forged for a request nobody sent.
        ("    end.send('ptfund-learner:0000/0\\n{}')\n", "error", "not an answer to its requests"),
        # The pipe closed under the answering loop.
        ("    end._sock.shutdown(socket.SHUT_RDWR)\n", "error", "stopped answering the checker"),
        # The pipe closed, the code still running: the host's kernel outlives the pipe.
        (
            "    end._sock.shutdown(socket.SHUT_RDWR)\n    time.sleep(30)\n",
            "error",
            "stopped answering the checker",
        ),
    ],
)
def test_learner_code_that_tampers_with_the_pipe_fails_with_a_true_sentence(action, status, said):
    verdict = asyncio.run(verify_in_fresh_kernel(BUMP, END_OF_PIPE + action, timeout=10))
    assert verdict.status == status, verdict.lines()
    assert said in verdict.headline, verdict.headline


# A correct solution, then code that takes over what answers the checker: it reaches the
# learner side's private module and has it repeat its first answer to every later request.
REPLAYS_ITS_ANSWERS = (
    "def _take_over():\n"
    "    import sys\n"
    "    m = sys.modules['ptfund_checks']._learner\n"
    "    real, kept = m._answer, []\n"
    "    def replay(request):\n"
    "        if not kept:\n"
    "            kept.append(real(request))\n"
    "        return dict(kept[0])\n"
    "    m._answer = replay\n"
    "_take_over()\n"
    "del _take_over\n"
)


@pytest.mark.slow
@pytest.mark.parametrize("pipe_on", [True, False])
def test_code_that_repeats_an_answer_to_another_request_is_told_so(monkeypatch, pipe_on):
    """The judge knows which run each begin it asked for is (the device run, a run on other
    data); an answer given again to another request is named as that, not judged as the
    values of the run asked for (which would blame the code for a device or a value it
    never produced)."""
    if not pipe_on:
        monkeypatch.setenv(judging.NO_PIPE_ENV, "1")
    exercise = Catalog.load().find_exercise("tensors/features-and-labels").exercise
    honest = asyncio.run(verify_in_fresh_kernel(exercise, exercise.solution))
    assert honest.passed, honest.lines()
    verdict = asyncio.run(verify_in_fresh_kernel(exercise, exercise.solution + "\n" + REPLAYS_ITS_ANSWERS))
    assert not verdict.passed
    assert "with the answer to another of its requests" in verdict.headline, verdict.lines()
    assert "took over what answers the checker" in verdict.headline
