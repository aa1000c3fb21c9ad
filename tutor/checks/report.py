"""Sending a verification's result out of the kernel so that learner code cannot forge it.

The result travels as display bundles of MIME ``application/vnd.ptfund+json``, which any
code in the kernel can also display. So before the learner's code runs, this module draws
a key from ``os.urandom`` (never part of the cell's text, so not in IPython's history or
linecache) and announces it in a first bundle that answers the verifier's request id.
Every later bundle carries an HMAC-SHA256 of its body under that key; the verifier accepts
only those, and treats any other bundle of this type as an attempt to forge a verdict.

Everything used on the way out (the publisher, the JSON encoder, the hash) is captured
when this module loads, before learner code runs; the body is encoded here, with no call
into code the learner can rebind.
"""

import hashlib
import os
import signal
import threading

from . import namespaces
from .runner import run_verification

try:
    from _json import encode_basestring_ascii as _quote
except ImportError:  # pragma: no cover - CPython always has _json
    from json.encoder import py_encode_basestring_ascii as _quote

MIME = "application/vnd.ptfund+json"
_sha256 = hashlib.sha256
_urandom = os.urandom
_float_repr = float.__repr__
_int_repr = int.__repr__
_main_thread = threading.main_thread()
_current_thread = threading.current_thread


def dumps(obj) -> str:
    """JSON text of plain values (the check library's results are made of them)."""
    kind = type(obj)
    if obj is None:
        return "null"
    if obj is True:
        return "true"
    if obj is False:
        return "false"
    if kind is str:
        return _quote(obj)
    if kind is int:
        return _int_repr(obj)
    if kind is float:
        text = _float_repr(obj)
        return text if text not in ("nan", "inf", "-inf") else _quote(text)
    if kind in (list, tuple):
        return "[" + ",".join([dumps(v) for v in obj]) + "]"
    if kind is dict:
        return "{" + ",".join([_quote(str(k)) + ":" + dumps(v) for k, v in obj.items() if type(k) is str]) + "}"
    return _quote(f"<{kind.__name__}>")


def sign(key: bytes, text: str) -> str:
    """HMAC-SHA256 (RFC 2104), by hand over the C hash: no Python code on the way."""
    block = key.ljust(64, b"\0")
    inner = _sha256(bytes([b ^ 0x36 for b in block]) + text.encode("utf-8")).digest()
    return _sha256(bytes([b ^ 0x5C for b in block]) + inner).hexdigest()


def _publisher():
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    return shell.display_pub.publish if shell is not None else None


def verify(request: str, payload: dict, library: dict | None = None) -> dict:
    """Run one verification; publish a signed result when running in an IPython kernel."""
    publish = _publisher()
    key = _urandom(32)

    def send(kind: str, body: dict, signed: bool = True) -> None:
        if publish is None:
            return
        text = dumps({"request": request, "kind": kind, **body})
        bundle = {"body": text, "sig": sign(key, text)} if signed else {"body": text}
        publish(data={MIME: bundle}, metadata={})

    send("hello", {"key": key.hex()}, signed=False)
    restore = _arm_interrupts()
    try:
        result = run_verification(payload, library=library, stage=lambda s: send("stage", {"stage": s}))
    except KeyboardInterrupt:
        if namespaces.INTERRUPTS["seen"]:
            raise  # the time limit: the engine reports it
        result = _stopped("Your code raised KeyboardInterrupt in another thread to stop the checks.")
    finally:
        restore()
    send("result", {"result": result})
    return result


def _stopped(message: str) -> dict:
    return {"passed": False, "error": None, "checks": [], "mistakes": [], "tampered": message}


def _arm_interrupts():
    """Tell the engine's interrupt (SIGINT, for the time limit) from a KeyboardInterrupt
    that learner code raises itself: only the first is allowed to stop the checks."""
    state = namespaces.INTERRUPTS
    state["seen"] = False
    if _current_thread() is not _main_thread:
        state["armed"] = False
        return lambda: None

    def on_sigint(signum, frame):
        state["seen"] = True
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGINT, on_sigint)
    except (ValueError, OSError):
        state["armed"] = False
        return lambda: None
    state["armed"] = True

    def restore():
        state["armed"] = False
        try:
            signal.signal(signal.SIGINT, previous)
        except (ValueError, OSError, TypeError):
            pass

    return restore
