"""Hundreds of generated malformed manifests, lessons and progress exports: always a clean list of
problems (or one sentence), never a traceback."""

from __future__ import annotations

import copy
from pathlib import Path

import fuzzing
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tutor.packs.loader import check_pack
from tutor.packs.problems import Problem
from tutor.packs.scaffold import new_pack

# Hundreds of generated packs per test: CI runs them, the fast loop does not.
pytestmark = pytest.mark.slow

KEYS = [
    "id",
    "title",
    "version",
    "lessons",
    "torch",
    "authors",
    "intuition",
    "exercises",
    "cards",
    "prompt",
    "setup",
    "starter",
    "solution",
    "checks",
    "kind",
    "expr",
    "expected",
    "hints",
    "mistakes",
    "when",
    "message",
    "wrong_solutions",
    "code",
    "type",
    "options",
    "correct",
    "feedback",
    "answers",
    "answer",
    "text",
    "compare",
    "args",
    "dims",
    "shape",
    "names",
    "teaches",
    "regex",
    "exception",
]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 10**6),
    st.floats(allow_nan=True),
    st.text(max_size=20),
    st.sampled_from(
        ["solution.py", "x.md", "../../etc/passwd.py", "value", "tensor", "choice", "a b", "{{x}}", "(", "Zeros"]
    ),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS), inner, max_size=5)),
    max_leaves=25,
)

BASE = None


def base_docs(tmp: Path) -> tuple[dict, dict]:
    root = new_pack(tmp / "base")
    manifest = yaml.safe_load((root / "pack.yaml").read_text())
    lesson = yaml.safe_load((root / "first-steps" / "lesson.yaml").read_text())
    return manifest, lesson


def mutate(doc, path_choices, data):
    """Replace or delete one value somewhere inside doc."""
    doc = copy.deepcopy(doc)
    node = doc
    for _ in range(data.draw(st.integers(0, 4))):
        if isinstance(node, dict) and node:
            key = data.draw(st.sampled_from(sorted(node)))
            if isinstance(node[key], (dict, list)) and node[key]:
                node = node[key]
                continue
        elif isinstance(node, list) and node:
            i = data.draw(st.integers(0, len(node) - 1))
            if isinstance(node[i], (dict, list)) and node[i]:
                node = node[i]
                continue
        break
    action = data.draw(st.sampled_from(["replace", "delete", "add"]))
    if isinstance(node, dict) and node:
        key = data.draw(st.sampled_from(sorted(node)))
        if action == "delete":
            del node[key]
        elif action == "add":
            node[data.draw(st.sampled_from(KEYS))] = data.draw(values)
        else:
            node[key] = data.draw(values)
    elif isinstance(node, list) and node:
        i = data.draw(st.integers(0, len(node) - 1))
        if action == "delete":
            del node[i]
        else:
            node[i] = data.draw(values)
    return doc


def assert_clean(root: Path):
    pack, problems = check_pack(root)  # must not raise
    for p in problems:
        assert isinstance(p, Problem)
        assert p.line >= 1 and p.col >= 1 and p.message
        str(p)
    return pack, problems


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(data=st.data())
def test_mutated_lessons_and_manifests_give_clean_problems(tmp_path_factory, data):
    global BASE
    if BASE is None:
        BASE = base_docs(tmp_path_factory.mktemp("base"))
    manifest, lesson = BASE
    root = new_pack(tmp_path_factory.mktemp("case") / "p")
    which = data.draw(st.sampled_from(["manifest", "lesson", "both"]))
    if which in ("manifest", "both"):
        manifest = mutate(manifest, None, data)
    if which in ("lesson", "both"):
        lesson = mutate(lesson, None, data)
    (root / "pack.yaml").write_text(yaml.safe_dump(manifest, allow_unicode=True))
    (root / "first-steps" / "lesson.yaml").write_text(yaml.safe_dump(lesson, allow_unicode=True))
    assert_clean(root)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(manifest=values, lesson=values)
def test_arbitrary_documents(tmp_path_factory, manifest, lesson):
    root = new_pack(tmp_path_factory.mktemp("arb") / "p")
    (root / "pack.yaml").write_text(yaml.safe_dump(manifest, allow_unicode=True))
    (root / "first-steps" / "lesson.yaml").write_text(yaml.safe_dump(lesson, allow_unicode=True))
    _, problems = assert_clean(root)
    if not isinstance(manifest, dict):
        assert problems


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=200))
def test_arbitrary_text_files(tmp_path_factory, text):
    root = new_pack(tmp_path_factory.mktemp("txt") / "p")
    (root / "first-steps" / "lesson.yaml").write_text(text)
    _, problems = assert_clean(root)
    assert problems


# ---------------------------------------------------------------- text-level mutations
# The same engine as scripts/fuzz_packs.py (10,000 seeds per file type); here a few hundred.


FUZZ = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(scope="module")
def fuzz_base(tmp_path_factory):
    where = tmp_path_factory.mktemp("fuzzbase")
    return fuzzing.make_pack_base(where), fuzzing.make_export(where)


@FUZZ
@given(seed=st.integers(0, 2**32 - 1))
def test_mutated_lesson_yaml_text_gives_clean_problems(fuzz_base, tmp_path_factory, seed):
    base, _ = fuzz_base
    fuzzing.check_pack_cleanly(fuzzing.pack_case(base, "lesson", seed, tmp_path_factory.mktemp("case")))


@FUZZ
@given(seed=st.integers(0, 2**32 - 1))
def test_mutated_pack_yaml_text_gives_clean_problems(fuzz_base, tmp_path_factory, seed):
    base, _ = fuzz_base
    fuzzing.check_pack_cleanly(fuzzing.pack_case(base, "manifest", seed, tmp_path_factory.mktemp("case")))


@FUZZ
@given(seed=st.integers(0, 2**32 - 1))
def test_mutated_progress_exports_import_or_give_one_sentence(fuzz_base, tmp_path_factory, seed):
    _, export = fuzz_base
    outcome = fuzzing.import_cleanly(fuzzing.export_case(export, seed), tmp_path_factory.mktemp("store"))
    assert outcome == "ok" or ("\n" not in outcome and outcome)


@FUZZ
@given(seed=st.integers(0, 2**32 - 1))
def test_mutated_exports_handed_to_grade_give_cells_or_notes(fuzz_base, tmp_path_factory, seed):
    _, export = fuzz_base
    outcome = fuzzing.grade_export_cleanly(fuzzing.grade_export_case(export, seed), tmp_path_factory.mktemp("g"))
    assert outcome in ("ok", "notes")


@FUZZ
@given(seed=st.integers(0, 2**32 - 1))
def test_mutated_gradescope_metadata_gives_a_name_or_none(tmp_path_factory, seed):
    fuzzing.metadata_cleanly(fuzzing.metadata_case(seed), tmp_path_factory.mktemp("m"))
