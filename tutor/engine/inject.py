"""The check library, sent to a kernel as source.

A kernel may run on another host or in another environment (``--kernel``) where ``tutor``
is not installed, so the engine never relies on importing ``tutor.checks`` there. Instead
it sends the package's source files; a small meta-path finder in the kernel serves them as
the package ``ptfund_checks`` (relative imports inside the package keep working).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

PACKAGE_NAME = "ptfund_checks"


def _checks_dir() -> Path:
    return Path(__file__).resolve().parent.parent / "checks"


Sources = tuple[dict[str, str], list[str]]  # ({module name: source}, package names)

# root -> (each file's path, mtime and size; what they held; its digest): every kernel start asks.
_read: dict[Path, tuple[list[tuple[Path, int, int]], Sources, str]] = {}


def checks_sources(root: Path | None = None) -> Sources:
    """({module name: source}, package names) for every .py file of the check library.
    Files are read again only once one of them changed (an edit shows up on the next start)."""
    found = _current(root or _checks_dir())[0]
    return dict(found[0]), list(found[1])


def checks_digest_now(root: Path | None = None) -> str:
    """The digest (``checks_digest``) of the library as its files are now."""
    return _current(root or _checks_dir())[1]


def _current(root: Path) -> tuple[Sources, str]:
    if not root.is_dir():
        empty: Sources = ({PACKAGE_NAME: ""}, [PACKAGE_NAME])
        return empty, checks_digest(*empty)
    paths = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if "__pycache__" in rel.parts or any(p.startswith(".") for p in rel.parts):
            continue
        try:
            st = path.stat()
        except OSError:
            continue
        paths.append((path, st.st_mtime_ns, st.st_size))
    cached = _read.get(root)
    if cached is None or cached[0] != paths:
        found = _read_sources(root, [path for path, _, _ in paths])
        cached = _read[root] = (paths, found, checks_digest(*found))
    return cached[1], cached[2]


def _read_sources(root: Path, paths: list[Path]) -> Sources:
    modules: dict[str, str] = {}
    packages = [PACKAGE_NAME]
    for path in paths:
        rel = path.relative_to(root)
        parts = list(rel.with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        name = ".".join([PACKAGE_NAME, *parts])
        if is_package and name not in packages:
            packages.append(name)
        try:
            modules[name] = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue  # a file being written right now; the others still load
    modules.setdefault(PACKAGE_NAME, "")
    return modules, packages


# Runs inside the kernel. Wrapped in a function so the learner's namespace gains no names.
_BOOTSTRAP_TEMPLATE = r'''
def __ptfund_install_checks(package, sources, packages, digest):
    import importlib.abc
    import importlib.util
    import linecache
    import sys

    class SourceFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        """Serves modules of `package` from the `sources` dict (name -> source)."""

        ptfund_package = package
        ptfund_digest = digest

        def __init__(self, sources, packages):
            self.sources = sources
            self.packages = set(packages)
            # name -> code object, compiled once: the checks' private copies (sealed.py) exec these too.
            self.compiled = {}

        def code(self, name):
            code = self.compiled.get(name)
            if code is None:
                code = self.compiled[name] = compile(self.sources[name], self._filename(name), "exec",
                                                     dont_inherit=True)
            return code

        def _filename(self, name):
            rel = name.replace(".", "/")
            return "<%s%s>" % (rel, "/__init__.py" if name in self.packages else ".py")

        def find_spec(self, fullname, path=None, target=None):
            if fullname not in self.sources:
                return None
            is_pkg = fullname in self.packages
            spec = importlib.util.spec_from_loader(fullname, self, origin=self._filename(fullname),
                                                   is_package=is_pkg)
            if is_pkg:
                spec.submodule_search_locations = []
            return spec

        def create_module(self, spec):
            return None

        def exec_module(self, module):
            name = module.__spec__.name
            filename = self._filename(name)
            source = self.sources[name]
            # Tracebacks from checks show real lines: linecache never evicts mtime=None entries.
            linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
            module.__file__ = filename
            exec(self.code(name), module.__dict__)

        def get_source(self, fullname):
            return self.sources.get(fullname)

    # A kernel forked from a warm parent has this very library loaded already: keep it.
    for finder in sys.meta_path:
        if getattr(finder, "ptfund_package", None) == package and getattr(finder, "ptfund_digest", None) == digest:
            return
    # Re-running the bootstrap (a new attach, a newer library) replaces the old finder and
    # forgets modules loaded from it, so the new source takes effect.
    sys.meta_path[:] = [f for f in sys.meta_path
                        if getattr(f, "ptfund_package", None) != package]
    for name in list(sys.modules):
        if name == package or name.startswith(package + "."):
            del sys.modules[name]
    sys.meta_path.insert(0, SourceFinder(sources, packages))


__ptfund_install_checks(__ARGS__)
del __ptfund_install_checks
'''


def checks_digest(sources: dict[str, str], packages: list[str]) -> str:
    """Names the library's exact sources: kernels compare it to what they have installed."""
    h = hashlib.sha256()
    for name in [*sorted(sources), "", *packages]:
        h.update(name.encode() + b"\0" + sources.get(name, "").encode("utf-8", "surrogatepass") + b"\0")
    return h.hexdigest()


def checks_bootstrap(root: Path | None = None) -> tuple[str, str]:
    """(Python source that, run in any kernel, makes the check library importable as
    ``ptfund_checks``; the library's digest). Reads the library's files now, so edits show
    up on the next start."""
    (sources, packages), digest = _current(root or _checks_dir())
    args = f"{PACKAGE_NAME!r}, {sources!r}, {packages!r}, {digest!r}"
    return _BOOTSTRAP_TEMPLATE.replace("__ARGS__", args, 1), digest


def checks_bootstrap_source(root: Path | None = None) -> str:
    return checks_bootstrap(root)[0]
