"""The pack loader and validator on good and broken packs: every error names its file:line."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tutor.packs import models as m
from tutor.packs.catalog import Catalog
from tutor.packs.loader import check_pack, load_pack
from tutor.packs.problems import PackError
from tutor.packs.scaffold import new_pack
from tutor.packs.schema import pack_schema

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def pack(tmp_path: Path) -> Path:
    return new_pack(tmp_path / "demo")


def lesson_yaml(pack: Path) -> Path:
    return pack / "first-steps" / "lesson.yaml"


def replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def line_of(path: Path, needle: str) -> int:
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if needle in line:
            return n
    raise AssertionError(needle)


def only_problem(pack: Path):
    _, problems = check_pack(pack)
    assert len(problems) == 1, "\n".join(map(str, problems))
    return problems[0]


def test_scaffold_is_valid_and_complete(pack: Path):
    loaded = load_pack(pack)
    assert loaded.id == "demo"
    [lesson] = loaded.lessons
    assert len(lesson.exercises) == 1 and len(lesson.cards) == 2
    ex = lesson.exercises[0]
    # the solution came from solution_zeros.py, not the file name
    assert "torch.float64" in ex.solution
    assert isinstance(ex.checks[0], m.TensorCheck)
    assert "## Shape and dtype" in lesson.intuition


def test_builtin_pack_validates():
    pack, problems = check_pack(REPO / "lessons")
    assert problems == [], "\n".join(map(str, problems))
    assert pack is not None and len(pack.lessons) >= 12


def test_unknown_field_points_at_the_key(pack: Path):
    f = lesson_yaml(pack)
    replace(f, "    title: A matrix of zeros", "    title: A matrix of zeros\n    hitns: []")
    p = only_problem(pack)
    assert p.file.endswith("first-steps/lesson.yaml")
    assert p.line == line_of(f, "hitns:") and p.col == 5
    assert p.field == "exercises[0].hitns"
    assert "did you mean 'hints'" in p.message


def test_missing_field_points_at_its_mapping(pack: Path):
    f = lesson_yaml(pack)
    replace(f, "    title: A matrix of zeros\n", "")
    p = only_problem(pack)
    assert p.line == line_of(f, "- id: zeros")
    assert p.field == "exercises[0].title" and "required field 'title'" in p.message


def test_wrong_type_and_bad_id(pack: Path):
    f = lesson_yaml(pack)
    replace(f, "- id: zeros", "- id: Zeros Matrix")
    replace(f, "        expr: t\n", "        expr: t\n        rtol: lots\n")
    _, problems = check_pack(pack)
    by_field = {p.field: p for p in problems}
    assert by_field["exercises[0].id"].line == line_of(f, "- id: Zeros Matrix")
    assert "lowercase" in by_field["exercises[0].id"].message
    assert by_field["exercises[0].checks[0].rtol"].line == line_of(f, "rtol: lots")


def test_unknown_check_kind_lists_the_kinds(pack: Path):
    f = lesson_yaml(pack)
    replace(f, "kind: tensor", "kind: tensr")
    p = only_problem(pack)
    assert p.line == line_of(f, "kind: tensr")
    assert "unknown kind 'tensr'" in p.message and "tensor" in p.message


def test_yaml_syntax_error_has_its_line(pack: Path):
    f = lesson_yaml(pack)
    replace(f, "    prompt: |", "    prompt: [unclosed")
    p = only_problem(pack)
    assert p.file.endswith("lesson.yaml") and "YAML syntax" in p.message
    assert line_of(f, "prompt: [unclosed") <= p.line <= line_of(f, "prompt: [unclosed") + 3


def test_duplicate_yaml_key(pack: Path):
    f = lesson_yaml(pack)
    replace(f, "summary:", "title: Again\nsummary:")
    p = only_problem(pack)
    assert p.line == line_of(f, "title: Again") and "duplicate key 'title'" in p.message


def test_code_error_inside_inline_block_maps_to_the_yaml_line(pack: Path):
    f = lesson_yaml(pack)
    replace(f, "      t = ...  # your code here", "      t = (1,  # your code here")
    p = only_problem(pack)
    assert p.field == "exercises[0].starter"
    assert p.line == line_of(f, "t = (1,  # your code here")
    assert "does not parse" in p.message


def test_code_error_inside_a_py_file_names_that_file(pack: Path):
    sol = pack / "first-steps" / "solution_zeros.py"
    sol.write_text("import torch\n\nt = torch.zeros(2, 3\n")
    p = only_problem(pack)
    assert p.file.endswith("first-steps/solution_zeros.py") and p.line == 3
    assert p.field == "exercises[0].solution"


def test_expression_that_does_not_parse(pack: Path):
    f = lesson_yaml(pack)
    replace(f, "        expr: t\n", "        expr: t +\n")
    p = only_problem(pack)
    assert p.line == line_of(f, "expr: t +") and "not a Python expression" in p.message


def test_missing_referenced_file(pack: Path):
    (pack / "first-steps" / "solution_zeros.py").unlink()
    f = lesson_yaml(pack)
    p = only_problem(pack)
    assert p.line == line_of(f, "solution: solution_zeros.py") and "file not found: solution_zeros.py" in p.message


def test_a_file_lessons_share_sits_in_a_folder_of_the_pack_that_is_no_lessons(pack: Path, tmp_path: Path):
    (pack / "shared").mkdir()
    (pack / "shared" / "solution_zeros.py").write_text("import torch\n\nt = torch.zeros(2, 3, dtype=torch.float64)\n")
    f = lesson_yaml(pack)
    replace(f, "solution: solution_zeros.py", "solution: ../shared/solution_zeros.py")
    loaded, problems = check_pack(pack)
    assert problems == [] and "float64" in loaded.lessons[0].exercises[0].solution
    # An error in the shared file names that file and its line.
    (pack / "shared" / "solution_zeros.py").write_text("import torch\n\nt = torch.zeros(2, 3\n")
    p = only_problem(pack)
    assert p.file.endswith("shared/solution_zeros.py") and p.line == 3
    # Another lesson's folder, a path that leaves the pack, or one that climbs back: one sentence each.
    other = pack / "second"
    other.mkdir()
    (other / "lesson.yaml").write_text("")
    (other / "solution_zeros.py").write_text("t = 1\n")
    (tmp_path / "outside.py").write_text("t = 1\n")
    for ref, said in (
        ("../second/solution_zeros.py", "is in the folder of the lesson second: a file lessons share goes in"),
        ("../../outside.py", "is outside the lesson folder"),
        ("../shared/../first-steps/solution_zeros.py", "is outside the lesson folder"),
    ):
        f.write_text(re.sub(r"solution: \S+", f"solution: {ref}", f.read_text(), count=1))
        problems = [q for q in check_pack(pack)[1] if q.file.endswith("first-steps/lesson.yaml")]
        assert len(problems) == 1 and said in problems[0].message, problems
        assert problems[0].line == line_of(f, f"solution: {ref}")
    # A link in the shared folder that leads out of the pack is not followed.
    f.write_text(re.sub(r"solution: \S+", "solution: ../shared/link.py", f.read_text(), count=1))
    (pack / "shared" / "link.py").symlink_to(tmp_path / "outside.py")
    assert any("leads out of the pack" in q.message or "link" in q.message for q in check_pack(pack)[1])


def test_lesson_order_names_missing_lesson(pack: Path):
    f = pack / "pack.yaml"
    replace(f, "  - first-steps", "  - first-steps\n  - second-steps")
    p = only_problem(pack)
    assert p.file.endswith("pack.yaml") and p.line == line_of(f, "- second-steps")
    assert "no lesson folder second-steps/" in p.message


def test_duplicate_ids_and_references(pack: Path):
    f = lesson_yaml(pack)
    replace(f, "  - id: shape-of-zeros", "  - id: default-dtype")
    replace(f, '      - when: "isinstance', '      - failed_check: nope\n        message: x\n      - when: "isinstance')
    _, problems = check_pack(pack)
    msgs = {p.field: p for p in problems}
    assert "used twice" in msgs["cards[1].id"].message
    assert (
        msgs["cards[1].id"].line
        == [n for n, text in enumerate(f.read_text().splitlines(), 1) if "- id: default-dtype" in text][1]
    )
    assert "no check with id 'nope'" in msgs["exercises[0].mistakes[0].failed_check"].message


def test_markdown_unclosed_fence_and_teaches(pack: Path):
    md = pack / "first-steps" / "intuition.md"
    md.write_text(md.read_text() + "\n```python\nx = 1\n")
    f = lesson_yaml(pack)
    replace(f, "teaches: Shape and dtype", "teaches: Strides")
    _, problems = check_pack(pack)
    fence = next(p for p in problems if "never closed" in p.message)
    assert fence.file.endswith("intuition.md") and fence.line == line_of(md, "```python")
    teach = next(p for p in problems if p.field == "cards[0].teaches")
    assert teach.line == line_of(f, "teaches: Strides") and "no heading 'Strides'" in teach.message


def test_non_utf8_file(pack: Path):
    md = pack / "first-steps" / "intuition.md"
    md.write_bytes(b"# Title\n\nfine\n\xff\xfe broken\n")
    p = only_problem(pack)
    assert p.file.endswith("intuition.md") and p.line == 4 and "not UTF-8" in p.message


def test_several_problems_in_one_run(pack: Path):
    f = lesson_yaml(pack)
    replace(f, "        expr: t\n", "        expr: t +\n")
    (pack / "first-steps" / "solution_zeros.py").write_text("t = (\n")
    replace(f, "teaches: Shape and dtype", "teaches: Nowhere")
    _, problems = check_pack(pack)
    assert len(problems) == 3


def test_choice_card_needs_one_correct_option(pack: Path):
    f = lesson_yaml(pack)
    replace(f, "        correct: true\n", "")
    p = only_problem(pack)
    assert p.field == "cards[0]" and "exactly one option with correct: true" in p.message
    assert p.line == line_of(f, "- id: default-dtype")


def test_quoted_version_hint(pack: Path):
    f = pack / "pack.yaml"
    replace(f, 'version: "0.1.0"', "version: 1.0")
    p = only_problem(pack)
    assert p.line == line_of(f, "version: 1.0") and "put it in quotes" in p.message


def test_not_a_pack(tmp_path: Path):
    _, problems = check_pack(tmp_path)
    assert "pack.yaml not found" in problems[0].message
    with pytest.raises(PackError) as err:
        load_pack(tmp_path)
    assert "pack.yaml not found" in str(err.value)


def test_catalog_keeps_working_with_a_broken_pack(pack: Path, tmp_path: Path):
    broken = new_pack(tmp_path / "broken")
    replace(lesson_yaml(broken), "kind: tensor", "kind: nope")
    cat = Catalog.load([str(pack), str(broken)], builtin=False)
    assert [p.id for p in cat.packs] == ["demo"]
    assert cat.broken == [broken] and cat.problems
    ref = cat.find_exercise("first-steps/zeros")
    assert ref.key == "first-steps/zeros" and ref.qualified == "demo:first-steps/zeros"
    assert ref.content_hash == cat.find_exercise("demo:first-steps/zeros").content_hash


def test_an_exercise_in_a_pack_that_could_not_load_is_said_to_be_there(pack: Path, tmp_path: Path):
    # "no lesson 'second'" alone would send the instructor looking for a typo in the id.
    from tutor.errors import TutorError

    broken = new_pack(tmp_path / "broken")
    replace(lesson_yaml(broken), "kind: tensor", "kind: nope")
    cat = Catalog.load([str(broken)], builtin=False)
    with pytest.raises(TutorError) as raised:
        cat.find_exercise("first-steps/zeros")
    said = str(raised.value)
    assert "no lesson 'first-steps' among the loaded packs; 1 pack(s) could not load: " in said
    assert f"{lesson_yaml(broken)}:{line_of(lesson_yaml(broken), 'kind: nope')}:" in said
    with pytest.raises(TutorError, match=r"no lesson 'nope' \(see"):  # nothing broken: nothing added
        Catalog.load([str(pack)], builtin=False).find_exercise("nope/zeros")


def test_catalog_ids_clash_needs_pack_prefix(tmp_path: Path):
    a = new_pack(tmp_path / "a")
    b = new_pack(tmp_path / "b")
    cat = Catalog.load([str(a), str(b)], builtin=False)
    from tutor.errors import TutorError

    with pytest.raises(TutorError, match="several packs; write one of: a:first-steps/zeros, b:first-steps/zeros"):
        cat.find_exercise("first-steps/zeros")
    assert cat.find_exercise("b:first-steps/zeros").pack.id == "b"
    with pytest.raises(TutorError, match="no lesson 'nope'"):
        cat.find_exercise("nope/zeros")


def test_schema_is_json_and_describes_both_files():
    schema = pack_schema()
    assert {"PackManifest", "Lesson", "TensorCheck", "PredictCard"} <= set(schema["$defs"])
    json.dumps(schema)
    shipped = json.loads((REPO / "lessons" / "pack.schema.json").read_text())
    assert shipped == schema, "lessons/pack.schema.json is stale: regenerate with `ptfund-tutor pack schema`"


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tutor", *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_cli_pack_new_validate_and_corrupt(tmp_path: Path):
    target = tmp_path / "p"
    r = run_cli("pack", "new", str(target))
    assert r.returncode == 0, r.stderr
    r = run_cli("pack", "validate", str(target))
    assert r.returncode == 0 and "no problems" in r.stdout
    f = lesson_yaml(target)
    replace(f, "kind: tensor", "kind: 42")
    r = run_cli("pack", "validate", str(target))
    assert r.returncode == 1
    assert re.search(
        rf"first-steps/lesson\.yaml:{line_of(f, 'kind: 42')}:\d+: exercises\[0\]\.checks\[0\]", r.stdout
    ), r.stdout
    assert "Traceback" not in r.stdout + r.stderr


def test_cli_errors_are_one_line(tmp_path: Path):
    r = run_cli("pack", "new", str(REPO))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "not empty" in r.stderr
    r = run_cli("pack", "validate", str(tmp_path / "missing"))
    assert r.returncode == 1 and "not a folder" in r.stdout
    r = run_cli("nonsense")
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_lessons_readme_table_is_current():
    sys.path.insert(0, str(REPO / "scripts"))
    import lessons_table

    readme = (REPO / "lessons" / "README.md").read_text()
    assert lessons_table.render(readme) == readme, "run: python scripts/lessons_table.py --write"
    # every topic of the curriculum issue has its lesson
    assert set(lessons_table.TOPICS) == {les.id for les in load_pack(REPO / "lessons").lessons}


def test_lesson_folder_left_out_of_the_list_is_a_warning_at_the_list(pack: Path, capsys):
    import shutil

    from tutor.cli import main

    shutil.copytree(pack / "first-steps", pack / "forgotten")
    replace(pack / "forgotten" / "lesson.yaml", "id: first-steps", "id: forgotten")
    (pack / "notes").mkdir()  # a folder without lesson.yaml is none of the pack's business
    loaded, problems = check_pack(pack)
    assert not problems and loaded is not None
    [warning] = loaded.warnings
    assert (warning.line, warning.col) == (line_of(pack / "pack.yaml", "lessons:"), 1)
    assert "forgotten/ is not in this list" in warning.message
    assert main(["pack", "validate", str(pack)]) == 0
    out = capsys.readouterr().out
    assert f"warning: {pack / 'pack.yaml'}:{warning.line}:1: lessons: the lesson folder forgotten/" in out


def test_turning_the_second_world_off_needs_a_reason(tmp_path):
    from pydantic import ValidationError

    from tutor.packs import models as m

    base = {"id": "e", "title": "E", "prompt": "p", "solution": "x = 1", "checks": [{"kind": "value", "expr": "x"}]}
    assert m.Exercise.model_validate(base).worlds() == [{"seed": 1, "variant": ""}]
    with pytest.raises(ValidationError, match="second_world: false needs second_world_reason"):
        m.Exercise.model_validate({**base, "second_world": False})
    off = m.Exercise.model_validate({**base, "second_world": False, "second_world_reason": "a fixed file"})
    assert off.worlds() == []
    two = m.Exercise.model_validate({**base, "seed": 5, "variants": ["x = 2", "x = 3"]})
    assert two.worlds() == [{"seed": 6, "variant": "x = 2"}, {"seed": 7, "variant": "x = 3"}]
