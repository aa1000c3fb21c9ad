"""Hostile or damaged pack files: one clear FILE:LINE problem each, bounded memory, no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tutor.packs.limits import MAX_FILE_BYTES, MAX_YAML_DEPTH, MAX_YAML_NODES
from tutor.packs.loader import check_pack
from tutor.packs.scaffold import new_pack
from tutor.packs.trust import pack_digest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def pack(tmp_path: Path) -> Path:
    return new_pack(tmp_path / "demo")


def lesson_yaml(pack: Path) -> Path:
    return pack / "first-steps" / "lesson.yaml"


def billion_laughs() -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 10):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def check_in_child(pack: Path) -> dict:
    """check_pack in a child process whose address space is capped, reporting peak Python memory."""
    script = textwrap.dedent(
        f"""
        import json, resource, tracemalloc
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
        tracemalloc.start()
        from tutor.packs.loader import check_pack
        _, problems = check_pack({str(pack)!r}, cache=False)
        print(json.dumps({{"peak": tracemalloc.get_traced_memory()[1], "problems": [str(p) for p in problems]}}))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


@pytest.mark.slow  # a child process
def test_billion_laughs_is_one_problem_with_bounded_memory(pack):
    lesson_yaml(pack).write_text(billion_laughs())
    result = check_in_child(pack)
    assert len(result["problems"]) == 1, result["problems"]
    assert "lesson.yaml:" in result["problems"][0] and "alias" in result["problems"][0]
    assert result["peak"] < 50 << 20


@pytest.mark.slow  # a child process
@pytest.mark.parametrize("which", ["yaml", "python"])
def test_a_file_at_the_bounds_loads_in_bounded_memory(pack, which):
    if which == "yaml":  # as many values as allowed, nested nearly as deep as allowed
        depth = MAX_YAML_DEPTH - 2
        deep = "[" * depth + "1" + "]" * depth
        count = (MAX_YAML_NODES - 10) // (depth + 1)
        lesson_yaml(pack).write_text("id: first-steps\nextra: [" + ",".join([deep] * count) + "]\n")
    else:  # the largest solution file allowed, which validation parses
        line = "t = torch.zeros(2, 3, dtype=torch.float64) + x[1:2, ::3] * (a @ b)\n"
        (pack / "first-steps" / "solution_zeros.py").write_text(line * ((MAX_FILE_BYTES - 100) // len(line)))
    result = check_in_child(pack)
    assert bool(result["problems"]) == (which == "yaml"), result["problems"]
    assert result["peak"] < 100 << 20


@pytest.mark.parametrize("text", ["&x [*x]\n", "a: &x\n  b: *x\n"])
def test_alias_that_contains_itself(pack, text):
    lesson_yaml(pack).write_text(text)
    _, problems = check_pack(pack, cache=False)
    assert [p.message for p in problems] == ["YAML alias contains itself (a value cannot be inside itself)"]
    assert problems[0].file.endswith("lesson.yaml") and problems[0].line == 1


def test_deep_nesting_is_a_problem(pack):
    depth = MAX_YAML_DEPTH + 5
    lesson_yaml(pack).write_text("id: x\nexercises: " + "[" * depth + "]" * depth + "\n")
    _, problems = check_pack(pack, cache=False)
    assert len(problems) == 1 and f"deeper than {MAX_YAML_DEPTH}" in problems[0].message
    assert problems[0].line == 2


def test_too_many_values_is_a_problem(pack):
    lesson_yaml(pack).write_text("id: x\nexercises: [" + "1," * (MAX_YAML_NODES + 1) + "]\n")
    _, problems = check_pack(pack, cache=False)
    assert len(problems) == 1 and f"more than {MAX_YAML_NODES} values" in problems[0].message


def test_large_file_is_a_problem_without_reading_it_all(pack):
    with open(pack / "first-steps" / "intuition.md", "ab") as f:
        f.truncate(50 * MAX_FILE_BYTES)  # sparse: large on paper, cheap on disk
    _, problems = check_pack(pack, cache=False)
    assert len(problems) == 1
    assert str(problems[0]).endswith(
        f"intuition: intuition.md is larger than {MAX_FILE_BYTES:,} bytes (the limit for a pack file)"
    )
    assert problems[0].file.endswith("lesson.yaml")


def test_fifo_is_not_read(pack):
    os.remove(pack / "first-steps" / "intuition.md")
    os.mkfifo(pack / "first-steps" / "intuition.md")
    _, problems = check_pack(pack, cache=False)
    assert [(p.field, p.message) for p in problems] == [("intuition", "intuition.md is not a regular file")]


def test_link_out_of_the_pack_is_named_and_not_read(pack, tmp_path):
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n\nnot for the pack\n")
    intuition = pack / "first-steps" / "intuition.md"
    intuition.unlink()
    intuition.symlink_to(secret)
    _, problems = check_pack(pack, cache=False)
    texts = [str(p) for p in problems]
    assert any("first-steps/intuition.md:1:1: link leads out of the pack" in t for t in texts), texts
    assert all("not for the pack" not in t for t in texts)


def test_lesson_folder_linked_out_of_the_pack_is_a_problem(pack, tmp_path):
    outside = tmp_path / "elsewhere"
    (pack / "first-steps").rename(outside)
    (pack / "first-steps").symlink_to(outside)
    _, problems = check_pack(pack, cache=False)
    assert any(p.file.endswith("first-steps") and "link leads out of the pack" in p.message for p in problems)
    assert any(p.file.endswith("lesson.yaml") and "leads out of the pack" in p.message for p in problems)


def test_linked_lesson_folder_inside_the_pack_is_hashed_by_its_target(pack):
    (pack / "first-steps").rename(pack / "real-steps")
    (pack / "first-steps").symlink_to("real-steps")
    loaded, problems = check_pack(pack, cache=False)
    assert problems == [] and loaded is not None
    before = pack_digest(pack)
    solution = pack / "real-steps" / "solution_zeros.py"
    solution.write_text(solution.read_text() + "\nimport os  # changed after trust\n")
    assert pack_digest(pack) != before


def test_linked_file_inside_the_pack_is_hashed_by_its_target(pack):
    shared = pack / "shared.py"
    solution = pack / "first-steps" / "solution_zeros.py"
    shared.write_text(solution.read_text())
    solution.unlink()
    solution.symlink_to(Path("..") / "shared.py")
    before = pack_digest(pack)
    shared.write_text(shared.read_text() + "\n# changed\n")
    assert pack_digest(pack) != before


def test_a_number_too_long_for_python_is_a_problem(pack):
    text = lesson_yaml(pack).read_text()
    lesson_yaml(pack).write_text(text.replace("id: first-steps", "id: " + "9" * 5000, 1))
    _, problems = check_pack(pack, cache=False)
    assert problems and all(p.file.endswith("lesson.yaml") for p in problems)


def test_a_yaml_bomb_is_refused_before_it_is_composed(monkeypatch):
    # PyYAML's composer recurses per level (PyYAML 6.0 exhausts the C stack on [[[[...,
    # with or without libyaml): the nesting is refused before composing.
    import yaml

    from tutor.packs import yamlsrc

    class PurePython(yaml.BaseLoader):
        def resolve(self, kind, value, implicit):
            return "?"

    monkeypatch.setattr(yamlsrc, "_Loader", PurePython)
    with pytest.raises(yamlsrc.YamlSyntaxError, match="nests deeper than"):
        yamlsrc.compose("[" * 100_000)
    assert yamlsrc.compose("a: [1, {b: [2]}]\n") is not None
