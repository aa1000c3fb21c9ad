"""Fixtures for every test: a lesson cache of its own (never the user's, see tutor/packs/cache.py), no
warm server unless the test asks for one, and no kernel outside tests marked slow. ``parses`` for the
tests of what the loader parses."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _own_lesson_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("PTFUND_TUTOR_CACHE", str(tmp_path_factory.mktemp("cache")))
    # `check` and `watch` verify in their own process unless a test asks for the warm
    # server (tests/test_warm_server.py): no test leaves a server behind for minutes.
    monkeypatch.setenv("PTFUND_TUTOR_NO_WARM", "1")


@pytest.fixture
def parses(monkeypatch) -> list[Path]:
    """The files the pack loader composes from YAML (a cache hit, or an outline, composes none)."""
    from tutor.packs import loader

    seen: list[Path] = []
    real = loader.load_located

    def counting(text, file):
        seen.append(Path(file))
        return real(text, file)

    monkeypatch.setattr(loader, "load_located", counting)
    return seen


# The fast loop (-m 'not slow') starts no kernel: a test that does must be marked slow.
# Kernels started in this process are refused for the whole of a test that is not, its
# fixtures included; one refused inside an app worker (which would swallow the error)
# still fails the test. Tests that start kernels through the CLI are marked by hand.
_started_kernels: set[str] = set()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if item.get_closest_marker("slow") is not None:
        yield
        return
    from tutor.engine.launch import TutorKernelManager

    original = TutorKernelManager.start_kernel

    async def refuse(self, *args, **kwargs):
        _started_kernels.add(item.nodeid)
        raise RuntimeError("kernels are refused outside tests marked slow")

    TutorKernelManager.start_kernel = refuse
    try:
        yield
    finally:
        TutorKernelManager.start_kernel = original


@pytest.fixture(autouse=True)
def _kernels_only_in_slow_tests(request):
    yield
    if request.node.nodeid in _started_kernels:
        pytest.fail(f"{request.node.nodeid} starts a kernel: mark it @pytest.mark.slow", pytrace=False)
