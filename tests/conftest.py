"""Every test gets a lesson cache of its own, never the user's (see tutor/packs/cache.py)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _own_lesson_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("PTFUND_TUTOR_CACHE", str(tmp_path_factory.mktemp("cache")))
