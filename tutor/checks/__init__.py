"""The check library: runs INSIDE the kernel against the learner's namespace.

It depends only on the standard library, torch and numpy, and its modules import each
other relatively, so the engine can inject its sources into a kernel that does not have
``tutor`` installed, as a package named ``ptfund_checks`` (see :func:`bootstrap_source`).

    from ptfund_checks import run_verification
    result = run_verification(payload)

Importing this package does not import torch (the UI process reads the sources to inject
them and must stay torch-free); ``run_verification`` imports the machinery on first use.
"""

from pathlib import Path

PACKAGE = "ptfund_checks"


def run_verification(payload: dict) -> dict:
    """Run setup + reference solution and setup + learner code, then the checks and
    mistakes of ``payload``; see runner.py and the project docs for the contract."""
    from .runner import run_verification as run

    return run(payload)


def source_files() -> dict:
    """{module name relative to the package ('', 'runner', 'kinds', 'kinds.values'): source}."""
    root = Path(__file__).resolve().parent
    out = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path.read_text(encoding="utf-8")
    return out


_BOOTSTRAP = '''
import importlib.abc as _abc, importlib.util as _util, sys as _sys

def _install(name, sources, packages):
    for key in [k for k in _sys.modules if k == name or k.startswith(name + ".")]:
        del _sys.modules[key]  # a warm kernel may hold an older copy
    _sys.meta_path[:] = [f for f in _sys.meta_path if getattr(f, "_ptfund_name", None) != name]

    class _Finder(_abc.MetaPathFinder, _abc.Loader):
        _ptfund_name = name

        def find_spec(self, fullname, path=None, target=None):
            if fullname == name or fullname.startswith(name + "."):
                rel = fullname[len(name) + 1:]
                if rel in sources:
                    return _util.spec_from_loader(fullname, self, is_package=rel in packages)
            return None

        def create_module(self, spec):
            return None

        def exec_module(self, module):
            rel = module.__name__[len(name) + 1:]
            filename = "<" + name + "/" + (rel.replace(".", "/") or "__init__") + ".py>"
            exec(compile(sources[rel], filename, "exec", dont_inherit=True), module.__dict__)

    _sys.meta_path.insert(0, _Finder())

_install(%(name)r, %(sources)r, %(packages)r)
del _install
'''


def bootstrap_source(name: str = PACKAGE) -> str:
    """Python source that, run in a kernel, makes ``import <name>`` load this library
    from the embedded sources (no files, no ``tutor`` needed)."""
    sources = source_files()
    root = Path(__file__).resolve().parent
    packages = sorted(k for k in sources if k == "" or (root / k.replace(".", "/") / "__init__.py").exists())
    return _BOOTSTRAP % {"name": name, "sources": sources, "packages": packages}
