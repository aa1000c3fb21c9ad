"""A private copy of the check library for one verification.

Learner code runs in the same process as the checks, so whatever it can reach by name it
can rebind: ``sys.modules["ptfund_checks.runner"].run_check``, entries of ``KINDS``,
``builtins.isinstance``. Each verification therefore runs a copy of the library loaded
before the learner's code: module objects registered nowhere, whose builtins are a copy
taken at load time and whose imports of each other go through a private importer (so a
lazy ``from .x import y`` inside a function also stays private). Rebinding the public
modules or the real builtins changes nothing this copy uses.
"""

import builtins
import sys
import types
from pathlib import Path

_compiled: dict = {}  # (module name, source) -> code object: compiling is the costly part


def _sources(package: str) -> tuple[dict, set]:
    """{module name: source} and the package names, from the injected finder or the files."""
    loader = _loader(package)
    found = getattr(loader, "sources", None)
    if isinstance(found, dict):
        return dict(found), set(getattr(loader, "packages", ()))
    root = sys.modules[package]
    sources, packages = {}, {package}
    base = Path(root.__path__[0])
    for path in sorted(base.rglob("*.py")):
        rel = path.relative_to(base)
        if "__pycache__" in rel.parts:
            continue
        parts = list(rel.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
            packages.add(".".join([package, *parts]))
        sources[".".join([package, *parts])] = path.read_text(encoding="utf-8")
    return sources, packages


def _filename(name: str, packages: set) -> str:
    # The same pseudo file names as the injected finder: tracebacks and linecache agree.
    rel = name.replace(".", "/")
    return f"<{rel}{'/__init__.py' if name in packages else '.py'}>"


def _loader(package: str):
    root = sys.modules[package]
    return getattr(getattr(root, "__spec__", None), "loader", None)


def _code(name: str, source: str, packages: set, loader=None):
    key = (name, source)
    code = _compiled.get(key)
    if code is None:
        # The injected finder compiled what the public modules imported: the same source
        # under the same file name, compiled once (about 0.1 s of a kernel's warm-up).
        shared = getattr(loader, "sources", None)
        if isinstance(shared, dict) and shared.get(name) == source and callable(getattr(loader, "code", None)):
            code = loader.code(name)
        else:
            code = compile(source, _filename(name, packages), "exec", dont_inherit=True)
        _compiled[key] = code
    return code


def compile_all(package: str) -> None:
    """Compile every module now (a spare kernel does this while it waits)."""
    sources, packages = _sources(package)
    loader = _loader(package)
    for name, source in sources.items():
        _code(name, source, packages, loader)


def load(package: str) -> dict:
    """{module name: module} of a fresh private copy of ``package``."""
    sources, packages = _sources(package)
    loader = _loader(package)
    modules: dict = {}
    real_import = builtins.__import__
    private_builtins = dict(vars(builtins))

    def get(name: str):
        if name in modules:
            return modules[name]
        if name not in sources:
            raise ImportError(f"{name} is not part of the check library")
        parent, _, last = name.rpartition(".")
        parent_module = get(parent) if parent and parent.startswith(package) else None
        module = types.ModuleType(name)
        module.__file__ = _filename(name, packages)
        module.__package__ = name if name in packages else parent
        module.__builtins__ = private_builtins  # type: ignore[attr-defined]  # every module has one at run time
        if name in packages:
            module.__path__ = []
        modules[name] = module
        if parent_module is not None:
            setattr(parent_module, last, module)
        exec(_code(name, sources[name], packages, loader), module.__dict__)
        return module

    def private_import(name, globals=None, locals=None, fromlist=(), level=0):
        if level:
            base = (globals or {}).get("__package__") or ""
            if level > 1:
                base = base.rsplit(".", level - 1)[0]
            full = f"{base}.{name}" if name else base
        elif name == package or name.startswith(package + "."):
            full = name
        else:
            return real_import(name, globals, locals, fromlist, level)
        module = get(full)
        for item in fromlist or ():
            if f"{full}.{item}" in sources:
                get(f"{full}.{item}")
        if fromlist or level:
            return module
        return get(package)

    private_builtins["__import__"] = private_import
    get(package)
    for name in sources:
        get(name)
    return modules
