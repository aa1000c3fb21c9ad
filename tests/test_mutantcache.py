"""pack test's memory of killed mutants: written whole (tutor.files.write_atomic), and read
only when it is a bounded JSON file of ours."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tutor.grading import mutantcache
from tutor.grading.mutantcache import MutantCache


def test_a_saved_cache_reads_back_and_leaves_no_temporary_file(tmp_path: Path):
    path = tmp_path / "pack-test" / "mutants.json"
    cache = MutantCache(path)
    cache.add_kill("k1")
    cache.add_values("v1", {"sums": {"kind": "number", "value": 3}})
    cache.save()
    again = MutantCache(path)
    assert again.killed("k1") and again.values == {"v1": {"sums": {"kind": "number", "value": 3}}}
    assert sorted(p.name for p in path.parent.iterdir()) == ["mutants.json"]


@pytest.mark.parametrize(
    "junk",
    [
        "not json",
        "[1, 2]",
        json.dumps({"kills": "abc", "values": []}),
        "[" * 100_000,  # deeper than the parser's recursion
        "folder",
        "fifo",
        "too large",
    ],
)
def test_a_file_that_is_not_ours_starts_an_empty_cache(tmp_path: Path, monkeypatch, junk: str):
    path = tmp_path / "mutants.json"
    if junk == "folder":
        path.mkdir()
    elif junk == "fifo":
        os.mkfifo(path)  # reading must not wait for a writer
    elif junk == "too large":
        monkeypatch.setattr(mutantcache, "MAX_BYTES", 10)
        path.write_text(json.dumps({"kills": ["k1"], "values": {}}))
    else:
        path.write_text(junk)
    cache = MutantCache(path)
    assert cache.kills == {} and cache.values == {}
