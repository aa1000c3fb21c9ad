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


def checks_sources(root: Path | None = None) -> tuple[dict[str, str], list[str]]:
    """({module name: source}, package names) for every .py file of the check library."""
    root = root or _checks_dir()
    modules: dict[str, str] = {}
    packages = [PACKAGE_NAME]
    if not root.is_dir():
        return {PACKAGE_NAME: ""}, packages
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if "__pycache__" in rel.parts or any(p.startswith(".") for p in rel.parts):
            continue
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
            exec(compile(source, filename, "exec", dont_inherit=True), module.__dict__)

        def get_source(self, fullname):
            return self.sources.get(fullname)

    # A kernel forked from a warm parent has this very library loaded already: keep it.
    for finder in sys.meta_path:
        if getattr(finder, "ptfund_package", None) == package and finder.ptfund_digest == digest:
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


def checks_bootstrap(root: Path | None = None) -> tuple[str, str]:
    """(Python source that, run in any kernel, makes the check library importable as
    ``ptfund_checks``; the library's digest). Reads the library's files now, so edits show
    up on the next start. A kernel that already has this very library (one forked from the
    fork server) is told only the digest (``checks_loaded_expression``)."""
    sources, packages = checks_sources(root)
    digest = hashlib.sha256(repr((sorted(sources.items()), packages)).encode()).hexdigest()
    args = f"{PACKAGE_NAME!r}, {sources!r}, {packages!r}, {digest!r}"
    return _BOOTSTRAP_TEMPLATE.replace("__ARGS__", args, 1), digest


def checks_bootstrap_source(root: Path | None = None) -> str:
    return checks_bootstrap(root)[0]


def checks_loaded_expression(digest: str) -> str:
    """A Python expression, true in a kernel that has the library of ``digest`` installed."""
    return (
        f"any(getattr(f, 'ptfund_package', None) == {PACKAGE_NAME!r} and f.ptfund_digest == {digest!r} "
        "for f in __import__('sys').meta_path)"
    )
