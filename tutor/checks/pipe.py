"""The pipe: requests and answers between the judge's kernel and the learner's, as bytes.

Where both kernels run on this machine, the host does not carry each request and answer
as a kernel's ``input()`` prompt and reply (four jupyter messages per question, each a
wake-up of three processes' event loops). Each kernel listens on 127.0.0.1 (binding is all
a confined kernel may do with TCP), the host connects to both and copies bytes between
them (tutor/grading/pipe.py), and each side reads and writes frames: a 4-byte length, then
UTF-8 text, the same text the prompts carried. The host still reads nothing it relays,
and what comes from the learner's kernel is still decoded as data only (wire.py).

The host connects first and sends the token it gave that kernel; a connection without it
is closed, so no other process on the machine can take the host's place. When the
learner's side ends (its code timed out, crashed, or closed the pipe), the host closes the
judge's end: the judge then asks the host, through ``input()``, what happened.

``End`` is one kernel's end; ``Piped`` is the judge's request-and-answer logic over it
(what the host's relay does for prompts: requests run ahead, answers kept until asked for).
Standard library only.
"""

from __future__ import annotations

import hmac
import json
import secrets
import select
import socket
import struct

HEADER = struct.Struct(">I")
MAX_FRAME = 256 << 20  # bytes in one answer: far above any exercise's, a bound on what a kernel holds
ACCEPT_WAIT = 30.0  # seconds the judge's end waits for the host (which connects before it answers)
TOKEN_WAIT = 2.0  # seconds a connection gets to show the token (the host sends it at once)
MAX_AHEAD = 64  # requests one verification may run ahead, as through the host
ANSWER_PROMPT = "ptfund-learner:"  # heads an answer, naming the request (as learner.py's prompts)
_CHUNK = 1 << 20


class Garbled(Exception):
    """The other end sent something that is not a frame of text."""


class End:
    """One kernel's end of the pipe: listening from creation, connected once the host comes."""

    def __init__(self, token: str):
        self._token = token.encode()
        self._listener: socket.socket | None = socket.create_server(("127.0.0.1", 0), backlog=4)
        self.port: int = self._listener.getsockname()[1]
        self._sock: socket.socket | None = None
        self._inbox = bytearray()
        self._eof = False

    def accept(self, wait: float | None = ACCEPT_WAIT) -> bool:
        """Take the host's connection (the first one that shows the token); False if none
        came within ``wait`` seconds (None: wait as long as it takes)."""
        listener = self._listener
        if listener is None:
            return self._sock is not None
        listener.settimeout(wait)
        try:
            while True:
                try:
                    sock, _ = listener.accept()
                except OSError:
                    return False
                sock.settimeout(TOKEN_WAIT)
                try:
                    shown = _read_exactly(sock, len(self._token))
                except OSError:
                    shown = b""
                if hmac.compare_digest(shown, self._token):
                    sock.settimeout(None)
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    self._sock = sock
                    return True
                sock.close()
        finally:
            listener.close()
            self._listener = None

    def send(self, text: str) -> None:
        """Write one frame; what arrives meanwhile is kept (neither side can block the other)."""
        data = text.encode()
        out = memoryview(HEADER.pack(len(data)) + data)
        sock = self._connected()
        while out:
            readable, writable, _ = select.select([sock] if not self._eof else [], [sock], [])
            if readable:
                self._take()
            if writable:
                sent = sock.send(out[:_CHUNK])
                out = out[sent:]

    def receive(self, timeout: float | None = None) -> str | None:
        """The next frame; None at the end of the pipe or after ``timeout`` seconds (see ``ended``)."""
        while True:
            frame = self._frame()
            if frame is not None:
                return frame
            if self._eof:
                return None
            readable, _, _ = select.select([self._connected()], [], [], timeout)
            if not readable:
                return None
            self._take()

    @property
    def ended(self) -> bool:
        """The other end closed, and every frame it sent was read."""
        return self._eof and self._frame_length() is None

    def closing(self) -> bool:
        """Without waiting: whether the other end has closed (frames it sent before stay readable)."""
        sock = self._connected()
        while not self._eof and select.select([sock], [], [], 0)[0]:
            self._take()
        return self._eof

    def ask(self, text: str) -> str:
        """Send ``text``; the reply is the next frame ("" at the end: the judge has decided)."""
        self.send(text)
        return self.receive() or ""

    def tell(self, text: str) -> str:
        """Send ``text`` without waiting for a reply: "stop" once the judge has closed its end."""
        self.send(text)
        return "stop" if self.closing() else ""

    def close(self) -> None:
        for sock in (self._listener, self._sock):
            if sock is not None:
                sock.close()
        self._listener = self._sock = None

    def _connected(self) -> socket.socket:
        if self._sock is None:
            raise OSError("the pipe is not connected")
        return self._sock

    def _take(self) -> None:
        try:
            data = self._connected().recv(_CHUNK)
        except (ConnectionResetError, BrokenPipeError):
            data = b""
        if not data:
            self._eof = True
        self._inbox += data
        length = self._frame_length()
        if length is not None and length > MAX_FRAME:
            raise Garbled(f"a frame of {length} bytes, more than {MAX_FRAME >> 20} MB")

    def _frame_length(self) -> int | None:
        if len(self._inbox) < HEADER.size:
            return None
        return HEADER.unpack_from(self._inbox)[0]

    def _frame(self) -> str | None:
        length = self._frame_length()
        if length is None or len(self._inbox) < HEADER.size + length:
            if self._eof and self._inbox:
                raise Garbled("a frame cut short")
            return None
        data = bytes(self._inbox[HEADER.size : HEADER.size + length])
        del self._inbox[: HEADER.size + length]
        try:
            return data.decode()
        except UnicodeDecodeError:
            raise Garbled("a frame that is not UTF-8 text") from None


def listening(token) -> End | None:
    """A kernel's end of the pipe for ``token``; None without one or where this kernel cannot
    listen (the host then relays every request as a prompt)."""
    if not isinstance(token, str):
        return None
    try:
        return End(token)
    except OSError:
        return None


def _read_exactly(sock: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            break
        data += chunk
    return data


def split_header(text: str) -> tuple[dict, str]:
    """A judge's request as the host reads it: the plain header (JSON on the first line; {}
    when it is not a JSON object) and the body, which the host passes on unread."""
    header_text, _, body = text.partition("\n")
    try:
        header = json.loads(header_text)
    except ValueError:
        header = {}
    return (header if isinstance(header, dict) else {}), body


class Piped:
    """The judge's requests over the pipe, answered as the host's relay answers its prompts:
    ``"ok:" + answer``, or the host's ``"fault:..."`` once the learner's side is gone.

    ``host`` asks the host (the judge's ``input()``): it is used only to learn why the pipe
    ended, or to say that the learner's side sent something that is not an answer."""

    POLL = 1.0  # seconds between asking the host whether the learner's side still runs

    def __init__(self, end: End, host, begin_id: str):
        self.end = end
        self.host = host
        self.begin_id = begin_id
        self.slots: list[str] = []  # the heads of the answers to requests run ahead, in order
        self.kept: dict[str, str] = {}  # answers read while waiting for another one
        self.asked: set[str] = set()  # heads of the answers still to come
        self.accepted = False

    def __call__(self, text: str) -> str:
        header, body = split_header(text)
        try:
            return self._request(header, body)
        except Garbled as exc:
            return self.host(json.dumps({"op": "garbled", "why": str(exc)}) + "\n")
        except (_Ended, OSError):  # the connection reset or closed under a write
            return self.host(json.dumps({"op": "gone"}) + "\n")
        except _Fault as fault:
            return str(fault)

    def _request(self, header: dict, body: str) -> str:
        op = header.get("op")
        if op == "begin" and header.get("world") == "main":
            if not self.accepted:
                self.accepted = True
                if not self.end.accept():
                    raise _Ended
                self.asked.add(ANSWER_PROMPT + self.begin_id)
            return "ok:" + self._answer(ANSWER_PROMPT + self.begin_id)
        if op in ("ahead", "ahead-answer") and header.get("count") is not None:
            count = header.get("count")
            if not isinstance(count, int) or not 0 < count <= MAX_AHEAD - len(self.slots):
                return "fault:" + json.dumps(
                    {"status": "crashed", "message": "the judge asked for too many runs ahead"}
                )
            batch = secrets.token_hex(8)
            heads = [f"{ANSWER_PROMPT}{batch}/{index}" for index in range(count)]
            self.slots += heads
            self.asked.update(heads)
            self.end.send(f"{batch}\n{body}")
            if op == "ahead":
                return "ok:"
        if op == "ahead-answer":
            index = header.get("index")
            if not isinstance(index, int) or not 0 <= index < len(self.slots):
                return "fault:" + json.dumps(
                    {"status": "crashed", "message": "the judge asked for a run nobody started"}
                )
            return "ok:" + self._answer(self.slots[index], keep=True)
        request = secrets.token_hex(8)
        self.asked.add(ANSWER_PROMPT + request)
        self.end.send(f"{request}\n{body}")
        return "ok:" + self._answer(ANSWER_PROMPT + request)

    def _answer(self, head: str, keep: bool = False) -> str:
        """The answer headed ``head``, reading (and keeping) the others that come first."""
        while head not in self.kept:
            frame = self.end.receive(self.POLL)
            if frame is None:
                if self.end.ended:
                    raise _Ended
                alive = self.host(json.dumps({"op": "alive"}) + "\n")
                if alive != "ok:":
                    raise _Fault(alive)
                continue
            got, _, answer = frame.partition("\n")
            if got not in self.asked:
                raise Garbled("an answer to no request")
            self.asked.discard(got)
            self.kept[got] = answer
        return self.kept[head] if keep else self.kept.pop(head)

    def close(self) -> None:
        self.end.close()


class _Ended(Exception):
    """The learner's side closed the pipe (or never connected): the host says why."""


class _Fault(Exception):
    """The host's fault, as it said it (``"fault:..."``)."""
