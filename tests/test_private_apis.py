"""Each library's private API is used in one module only: Textual's (and textual-image's)
in tutor/app/_textual_compat.py, jupyter_client's in tutor/engine/_jupyter_compat.py;
each name they use still exists in the version installed (the Textual versions checked
are named in the module)."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
from importlib.metadata import version
from pathlib import Path

import pytest

import tutor.app
import tutor.engine
from tutor.app import _textual_compat as compat
from tutor.engine import _jupyter_compat as jupyter_compat

APP = Path(tutor.app.__file__).resolve().parent


def test_the_installed_versions_are_the_ones_checked():
    # A new Textual: run this file, look at what changed, then add the version to CHECKED_ON.
    for dist, checked in compat.CHECKED_ON.items():
        assert version(dist) in checked, f"{dist} {version(dist)} is not among the versions checked: {checked}"


@pytest.mark.parametrize("owner", sorted(compat.PRIVATE) + sorted(jupyter_compat.PRIVATE))
def test_every_private_name_a_compat_module_uses_still_exists(owner: str):
    names = {**compat.PRIVATE, **jupyter_compat.PRIVATE}[owner]
    module_name, _, cls_name = owner.rpartition(".")
    try:
        target = getattr(importlib.import_module(module_name), cls_name)
    except (ImportError, AttributeError):  # a module itself (textual_image._terminal)
        target = importlib.import_module(owner)
    source = inspect.getsource(target)
    for name in names:
        assert hasattr(target, name) or f"self.{name} =" in source, f"{owner} has no {name}"


def _app_modules():
    return [importlib.import_module(m.name) for m in pkgutil.walk_packages(tutor.app.__path__, "tutor.app.")]


def _textual_bases(cls: type) -> list[type]:
    return [b for b in cls.__mro__[1:] if b.__module__.split(".")[0] in ("textual", "textual_image")]


def private_uses() -> list[str]:
    """Where tutor.app (outside the compat module) overrides, reads or imports a private
    Textual name: a private module, a private method it overrides, a ``self._x`` that a
    Textual base class also uses."""
    found = []
    for path in sorted(APP.rglob("*.py")):
        if path.name == "_textual_compat.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                parts = name.split(".")
                if parts[0] in ("textual", "textual_image") and any(p.startswith("_") for p in parts[1:]):
                    found.append(f"{path.name}:{node.lineno}: imports {name}")
    for module in _app_modules():
        if module is compat:
            continue
        for cls in vars(module).values():
            if not inspect.isclass(cls) or cls.__module__ != module.__name__ or not _textual_bases(cls):
                continue
            bases = _textual_bases(cls)
            base_source = "\n".join(inspect.getsource(b) for b in bases if b.__module__ != "builtins")
            for attr, value in vars(cls).items():
                private = attr.startswith("_") and not attr.startswith("__")
                if private and inspect.isfunction(value) and any(attr in vars(b) for b in bases):
                    found.append(f"{cls.__qualname__}.{attr} overrides Textual's private method")
            used = set(re.findall(r"self\.(_[a-z]\w*)", inspect.getsource(cls)))
            for attr in sorted(used):
                if re.search(rf"self\.{attr}\b", base_source) and attr not in vars(cls):
                    found.append(f"{cls.__qualname__} uses Textual's private self.{attr}")
    return found


def test_no_private_textual_api_outside_the_compat_module():
    assert private_uses() == []


def test_no_private_jupyter_client_method_is_overridden_outside_its_compat_module():
    found = []
    for info in pkgutil.walk_packages(tutor.engine.__path__, "tutor.engine."):
        module = importlib.import_module(info.name)
        if module is jupyter_compat:
            continue
        for cls in vars(module).values():
            if not inspect.isclass(cls) or cls.__module__ != module.__name__:
                continue
            bases = [b for b in cls.__mro__[1:] if b.__module__.startswith("jupyter_client")]
            for attr, value in vars(cls).items():
                private = attr.startswith("_") and not attr.startswith("__")
                if private and inspect.isfunction(value) and any(attr in vars(b) for b in bases):
                    found.append(f"{info.name}.{cls.__qualname__}.{attr}")
    assert found == []
