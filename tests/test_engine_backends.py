"""Where a kernel runs is chosen once, by name, from one registry (tutor/engine/backends.py)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import tutor.engine
from tutor.engine.backend import KernelBackend
from tutor.engine.backends import BACKENDS, make_backend
from tutor.engine.errors import EngineError
from tutor.engine.session import KernelSession


@pytest.mark.parametrize(
    ("options", "name", "backend"),
    [
        ({}, "fork", "LocalBackend"),
        ({"preload_torch": True}, "spawn", "LocalBackend"),
        ({"connection_file": "kernel-1.json"}, "attached", "AttachedBackend"),
        ({"gateway": "http://127.0.0.1:8888"}, "gateway", "GatewayBackend"),
        ({"connection_file": "kernel-1.json", "gateway": "http://127.0.0.1:8888"}, "attached", "AttachedBackend"),
    ],
)
def test_a_session_names_its_backend_and_the_registry_makes_it(monkeypatch, options, name, backend):
    monkeypatch.delenv("PTFUND_TUTOR_GATEWAY", raising=False)
    session = KernelSession(**options)
    assert session.backend_name == name
    assert type(make_backend(name, session)).__name__ == backend  # made, not started


def test_fork_and_spawn_differ_in_whether_the_fork_server_is_asked():
    session = KernelSession()
    assert make_backend("fork", session).fork is True  # type: ignore[attr-defined]
    assert make_backend("spawn", session).fork is False  # type: ignore[attr-defined]


def test_an_unknown_backend_is_one_sentence():
    with pytest.raises(
        EngineError, match=r"^There is no kernel backend 'ssh'; there are: fork, spawn, attached, gateway\.$"
    ):
        make_backend("ssh", KernelSession())


def test_every_backend_class_is_in_the_registry(monkeypatch):
    monkeypatch.delenv("PTFUND_TUTOR_GATEWAY", raising=False)
    concrete = set()
    for info in pkgutil.iter_modules(tutor.engine.__path__, "tutor.engine."):
        for cls in vars(importlib.import_module(info.name)).values():
            if inspect.isclass(cls) and issubclass(cls, KernelBackend) and not inspect.isabstract(cls):
                concrete.add(cls.__name__)
    session = KernelSession(connection_file="kernel-1.json", gateway="http://127.0.0.1:8888")
    session.connection_file, session.gateway = "kernel-1.json", "http://127.0.0.1:8888"  # both, for the factories
    made = {type(factory(session)).__name__ for factory in BACKENDS.values()}
    assert concrete == made
