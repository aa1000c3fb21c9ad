"""Engine parts that need no kernel: the capped output buffer, fault sentences, injection."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap

import pytest

from tutor.engine import faults
from tutor.engine.events import OmittedEvent, StreamEvent
from tutor.engine.inject import checks_bootstrap_source, checks_sources
from tutor.engine.output import OutputBuffer, cap_bundle, strip_ansi

# ---------------------------------------------------------------- output buffer


def feed(buf: OutputBuffer, text: str, chunk: int = 4096, name: str = "stdout") -> list:
    events = []
    for i in range(0, len(text), chunk):
        events += buf.add_stream(name, text[i : i + chunk])
    return events


def test_small_output_streams_through_unchanged():
    buf = OutputBuffer()
    events = feed(buf, "a\nb\n", chunk=1)
    assert "".join(e.text for e in events) == "a\nb\n"
    assert buf.finish() == []
    assert buf.text() == "a\nb\n"
    assert buf.omitted == 0


@pytest.mark.parametrize("chunk", [1, 7, 100, 1 << 20])
def test_flood_keeps_head_and_tail_with_a_marker(chunk):
    buf = OutputBuffer(head_lines=20, tail_lines=5)
    text = "".join(f"{i}\n" for i in range(1000))
    live = feed(buf, text, chunk=chunk)
    end = buf.finish()
    assert "".join(e.text for e in live) == "".join(f"{i}\n" for i in range(20))
    assert end[0] == OmittedEvent(975)
    assert isinstance(end[1], StreamEvent) and end[1].text == "".join(f"{i}\n" for i in range(995, 1000))
    out = buf.text()
    assert "… 975 lines omitted …" in out
    assert out.startswith("0\n1\n") and out.endswith("998\n999\n")
    assert buf.total_lines == 1000


def test_long_line_is_cut_with_a_note():
    buf = OutputBuffer()
    feed(buf, "x" * 50_000 + "\nend\n")
    out = buf.text()
    assert len(out) < 11_000
    assert "characters omitted" in out and out.endswith("end\n")


def test_carriage_return_keeps_the_visible_line():
    buf = OutputBuffer()
    events = feed(buf, "10%\r50%\r100%\ndone\n", chunk=3)
    assert buf.text() == "100%\ndone\n"
    assert "\r" in "".join(e.text for e in events)  # the live stream keeps it for the UI


def test_streams_interleave_and_keep_names():
    buf = OutputBuffer()
    events = buf.add_stream("stdout", "out\n") + buf.add_stream("stderr", "err\n")
    assert [(e.name, e.text) for e in events] == [("stdout", "out\n"), ("stderr", "err\n")]
    assert buf.text() == "out\nerr\n"


def test_text_plain_is_capped_but_custom_mime_kept():
    bundle = {"text/plain": "y" * 1_000_000, "application/vnd.ptfund+json": {"big": "z" * 300_000}}
    capped = cap_bundle(bundle)
    assert len(capped["text/plain"]) < 250_000
    assert capped["application/vnd.ptfund+json"] is bundle["application/vnd.ptfund+json"]


def test_displays_kept_are_bounded_in_bytes_first_and_last():
    from tutor.engine.events import DisplayEvent
    from tutor.engine.output import DISPLAY_BYTES, bundle_size

    buf = OutputBuffer()
    blob = "A" * (1 << 20)
    shown = [buf.add_display(DisplayEvent({"text/plain": str(i), "image/png": blob})) for i in range(300)]
    buf.add_display(DisplayEvent({"application/x-answer": {"request": "r", "body": "the last one"}}))
    buf.finish()
    kept = [d.data.get("text/plain") for d in buf.displays]
    assert sum(bundle_size(d.data) for d in buf.displays) <= DISPLAY_BYTES
    assert kept[:3] == ["0", "1", "2"] and shown[0] and not shown[-1]  # the first ones, shown as they came
    assert "application/x-answer" in buf.displays[-1].data and kept[-2] == "299"  # and the last ones
    assert buf.omitted_displays == 301 - len(buf.displays) > 200


def test_strip_ansi():
    assert strip_ansi("\x1b[31mValueError\x1b[39m: \x1b[1;32mbad\x1b[0m") == "ValueError: bad"


# ---------------------------------------------------------------- sentences


@pytest.mark.parametrize(
    "rc, word", [(-11, "segmentation fault"), (3, "exit with status 3"), (-9, "SIGKILL"), (None, "stopped responding")]
)
def test_crash_sentences_are_one_sentence(rc, word):
    text = faults.crashed(rc)
    assert word in text
    assert text.endswith(".") and text.count(". ") == 0
    assert "variables are gone" in text


def test_error_sentences():
    assert "sys.exit()" in faults.for_error("SystemExit", "")
    assert "40 TB" in faults.for_error(
        "RuntimeError",
        "[enforce fail] DefaultCPUAllocator: can't allocate memory: you tried to "
        "allocate 40000000000000 bytes. Error code 12",
    )
    assert faults.for_error("ValueError", "bad") is None


# ---------------------------------------------------------------- injection


def test_checks_bootstrap_makes_a_package_with_relative_imports(tmp_path):
    pkg = tmp_path / "checks"
    (pkg / "kinds").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .core import answer\n")
    (pkg / "core.py").write_text("answer = 42\n")
    (pkg / "kinds" / "__init__.py").write_text("")
    (pkg / "kinds" / "tensor.py").write_text("from ..core import answer\ndef boom():\n    raise ValueError('x')\n")
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "junk.py").write_text("raise SystemExit")
    sources, packages = checks_sources(pkg)
    assert set(sources) == {"ptfund_checks", "ptfund_checks.core", "ptfund_checks.kinds", "ptfund_checks.kinds.tensor"}
    assert set(packages) == {"ptfund_checks", "ptfund_checks.kinds"}
    script = checks_bootstrap_source(pkg) + textwrap.dedent("""
        import traceback
        import ptfund_checks, ptfund_checks.kinds.tensor as t
        assert ptfund_checks.answer == 42 and t.answer == 42
        assert ptfund_checks.__name__ == "ptfund_checks"
        try:
            t.boom()
        except ValueError:
            assert "raise ValueError('x')" in traceback.format_exc()  # source lines shown
        leftovers = [n for n in globals() if n.startswith("__ptfund")]
        assert not leftovers, leftovers
        print("ok")
    """)
    # A clean interpreter that cannot import tutor: the source must stand alone.
    out = subprocess.run(
        [sys.executable, "-I", "-"], input=script, capture_output=True, text=True, cwd=tmp_path, timeout=60
    )
    assert out.stdout.strip() == "ok", out.stderr


def test_the_bootstrap_keeps_the_same_library_and_replaces_any_other(tmp_path):
    """Run twice with the same sources, the installed package stays (a forked kernel's);
    an edited library, or one installed by a tutor that did not stamp a digest, is replaced."""
    pkg = tmp_path / "checks"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("EDITION = 1\n")
    first = checks_bootstrap_source(pkg)
    (pkg / "__init__.py").write_text("EDITION = 2\n")
    edited = checks_bootstrap_source(pkg)
    script = (
        first
        + textwrap.dedent("""
        import sys
        import ptfund_checks
        kept = ptfund_checks
    """)
        + first
        + textwrap.dedent("""
        import ptfund_checks
        assert ptfund_checks is kept and ptfund_checks.EDITION == 1
    """)
        + edited
        + textwrap.dedent("""
        import ptfund_checks
        assert ptfund_checks.EDITION == 2
        del type(sys.meta_path[0]).ptfund_digest  # as a finder from before digests
    """)
        + first
        + textwrap.dedent("""
        import ptfund_checks
        assert ptfund_checks.EDITION == 1
        print("ok")
    """)
    )
    out = subprocess.run([sys.executable, "-I", "-"], input=script, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "ok", out.stderr


def test_bootstrap_of_the_real_check_library_loads():
    sources, _ = checks_sources()
    assert "ptfund_checks" in sources
    script = checks_bootstrap_source() + "\nimport ptfund_checks\nprint(ptfund_checks.__name__)\n"
    # On stdin: the library's source has outgrown what one command-line argument may hold.
    out = subprocess.run([sys.executable, "-I", "-"], input=script, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip().endswith("ptfund_checks"), out.stderr


def test_engine_import_stays_light():
    """The UI process imports the engine: never torch, never textual."""
    code = (
        "import sys, tutor.engine, tutor.engine.session, tutor.engine.pool, "
        "tutor.commands.doctor; from tutor.engine import KernelSession, KernelPool; "
        "bad = [m for m in ('torch', 'textual', 'numpy') if m in sys.modules]; print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr


# ---------------------------------------------------------------- delivery


async def test_stream_events_of_one_burst_are_coalesced():
    from tutor.engine.run import Run

    got = []
    run = Run(got.append, None)
    for i in range(1000):
        run.emit(StreamEvent("stdout", f"{i}\n"))
    run.emit(StreamEvent("stderr", "warn\n"))
    assert got == []  # delivered on the next loop turn, as one event per stream
    await asyncio.sleep(0)
    assert [e.name for e in got] == ["stdout", "stderr"]
    assert got[0].text == "".join(f"{i}\n" for i in range(1000))
    run.emit(StreamEvent("stdout", "x\n"))
    run.emit(OmittedEvent(3))  # any other event first flushes the pending text, in order
    assert got[2:] == [StreamEvent("stdout", "x\n"), OmittedEvent(3)]


def test_messages_are_verified_before_use():
    from jupyter_client.session import Session

    from tutor.engine.connection import Connection

    class Client:
        session = Session(key=b"secret")

    conn = Connection(Client())
    frames = Client.session.serialize(Client.session.msg("stream", {"name": "stdout", "text": "hi"}))
    msg = conn._deserialize(list(frames))
    assert msg["content"] == {"name": "stdout", "text": "hi"} and msg["msg_type"] == "stream"
    with pytest.raises(ValueError, match="duplicate"):
        conn._deserialize(list(frames))  # a replayed message
    forged = Client.session.serialize(Client.session.msg("stream", {"name": "stdout", "text": "a"}))
    forged[-1] = b'{"name": "stdout", "text": "forged"}'
    with pytest.raises(ValueError, match="signature"):
        conn._deserialize(list(forged))
