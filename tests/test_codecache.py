"""The check library's code objects, compiled by one fork server and kept for the next
(tutor/engine/codecache.py): used when they are this library's, ignored otherwise."""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
import textwrap

from tutor.engine import codecache
from tutor.engine.inject import checks_bootstrap_source


class Finder:
    """The parts of inject.py's SourceFinder the cache uses, over two small modules."""

    ptfund_package = "ptfund_checks"

    def __init__(self, digest: str = "d" * 64):
        self.ptfund_digest = digest
        self.sources = {"ptfund_checks": "X = 1\n", "ptfund_checks.more": "def f():\n    return 2\n"}
        self.packages = {"ptfund_checks"}
        self.compiled: dict = {}

    def _filename(self, name):
        rel = name.replace(".", "/")
        return f"<{rel}{'/__init__.py' if name in self.packages else '.py'}>"

    def code(self, name):
        if name not in self.compiled:
            self.compiled[name] = compile(self.sources[name], self._filename(name), "exec", dont_inherit=True)
        return self.compiled[name]


def test_what_one_fork_server_compiled_the_next_one_reuses(tmp_path, monkeypatch):
    monkeypatch.setenv("PTFUND_TUTOR_CACHE", str(tmp_path))
    first = Finder()
    assert codecache.load_into(first) == 0  # nothing kept yet
    first.code("ptfund_checks")
    codecache.save_from(first)  # not every module compiled: nothing kept
    assert not list(tmp_path.rglob("*.marshal"))
    first.code("ptfund_checks.more")
    codecache.save_from(first)
    second = Finder()
    assert codecache.load_into(second) == 2
    namespace: dict = {}
    exec(second.compiled["ptfund_checks.more"], namespace)
    assert namespace["f"]() == 2
    assert codecache.load_into(Finder(digest="e" * 64)) == 0  # other sources: another file


def test_a_cache_that_is_not_this_librarys_code_is_ignored(tmp_path, monkeypatch):
    monkeypatch.setenv("PTFUND_TUTOR_CACHE", str(tmp_path))
    finder = Finder()
    finder.code("ptfund_checks")
    finder.code("ptfund_checks.more")
    codecache.save_from(finder)
    (path,) = tmp_path.rglob("*.marshal")
    for written in (
        b"\x00not marshal data",
        marshal.dumps(["a list"]),
        marshal.dumps({"ptfund_checks": "source, not code"}),
        marshal.dumps({"ptfund_checks": compile("X = 2", "<elsewhere.py>", "exec")}),  # another file's code
        marshal.dumps({"os": compile("X = 2", "<os.py>", "exec")}),  # not a module of the library
    ):
        path.write_bytes(written)
        fresh = Finder()
        assert codecache.load_into(fresh) == 0, written
        assert fresh.compiled == {}
    path.write_bytes(b"\x00" * (codecache.MAX_BYTES + 1))
    assert codecache.load_into(Finder()) == 0  # too large to be ours


def test_older_versions_caches_are_pruned(tmp_path, monkeypatch):
    monkeypatch.setenv("PTFUND_TUTOR_CACHE", str(tmp_path))
    for number in range(codecache.KEEP + 3):
        finder = Finder(digest=f"{number:032x}" + "0" * 32)
        finder.code("ptfund_checks")
        finder.code("ptfund_checks.more")
        codecache.save_from(finder)
        os.utime(codecache._path(finder.ptfund_digest), (number, number))
    assert len(list(tmp_path.rglob("*.marshal"))) == codecache.KEEP + 1  # the newest and KEEP others


def test_the_real_library_compiled_by_a_fork_servers_warm_up_is_loaded_by_the_next(tmp_path):
    # In a new process each time, as fork servers are: the bootstrap installs the finder.
    script = textwrap.dedent(
        """
        import json, sys
        from tutor.engine import codecache
        exec(compile(sys.stdin.read(), "<bootstrap>", "exec"), {})
        finder = next(f for f in sys.meta_path if getattr(f, "ptfund_package", None) == "ptfund_checks")
        loaded = codecache.load_into(finder)
        from ptfund_checks.sealed import compile_all
        compile_all("ptfund_checks")
        codecache.save_from(finder)
        print(json.dumps({"loaded": loaded, "modules": len(finder.sources)}))
        """
    )
    env = dict(os.environ, PTFUND_TUTOR_CACHE=str(tmp_path))
    source = checks_bootstrap_source()
    runs = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", script], input=source, capture_output=True, text=True, env=env, check=True
            ).stdout
        )
        for _ in range(2)
    ]
    assert runs[0]["loaded"] == 0
    assert runs[1]["loaded"] == runs[1]["modules"] > 20


def test_without_the_library_s_finder_nothing_is_read_or_written(tmp_path, monkeypatch):
    monkeypatch.setenv("PTFUND_TUTOR_CACHE", str(tmp_path))
    assert codecache.load_into(None) == 0
    codecache.save_from(None)
    assert not list(tmp_path.iterdir())
