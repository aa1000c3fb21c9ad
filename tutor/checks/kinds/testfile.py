"""pytest checks: an author's test file, as an outside course wrote it, against the learner's
code imported as ``module``. Each test is reported as a check of its own, in pytest's words.

The tests run where the learner's code runs (pytestrun.py, in the learner's kernel) and
come back as data: a name, an outcome and a message per test. The judge checks that every
test the file defines reported, so a run that ended early does not read as a pass; what
each test saw it cannot check (docs/trust.md).
"""

import ast

from .. import wire
from ..context import AuthoringError, Context, Outcome
from ..guard import Tampered
from ..namespaces import MODULE_KEY

_FAILING = ("failed", "error", "timeout")
MAX_RECORDS = 200  # as many as the learner's side sends (pytestrun.MAX_TESTS)


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _is_test(node) -> bool:
    """A function pytest collects: named test..., and not a fixture."""
    if not isinstance(node, _FUNCTIONS) or not node.name.startswith("test"):
        return False
    return not any("fixture" in ast.unparse(d) for d in node.decorator_list)


def defined_tests(source: str) -> list:
    """The test functions the file defines at its top level and in its Test classes, as
    pytest names them (without parameters). A class with ``__init__`` is not collected."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise AuthoringError(f"the test file does not parse (line {exc.lineno}: {exc.msg})") from None
    names = []
    for node in tree.body:
        if isinstance(node, _FUNCTIONS) and _is_test(node):
            names.append(node.name)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            methods = [f for f in node.body if isinstance(f, _FUNCTIONS)]
            if not any(f.name == "__init__" for f in methods):
                names += [f"{node.name}::{f.name}" for f in methods if _is_test(f)]
    return names


def check_pytest(check: dict, ctx: Context) -> Outcome:
    source = check["code"]
    expected = defined_tests(source)
    if not expected:
        raise AuthoringError("the test file defines no test (functions named test_...)")
    if ctx.code_error is not None:  # importing a module whose code raises fails, as it would for the course
        return Outcome(False, f"the tests could not import your code: {ctx.code_error.phrase()}")
    request = {
        "source": source,
        "module": check["module"],
        "seed": ctx.seed,
        "timeout": float(check.get("timeout") or 10.0),
    }
    client = ctx.remote
    if client is None:
        from ..pytestrun import run_file

        with ctx.side("learner"):
            report = run_file(
                request["source"],
                ctx.learner.get(MODULE_KEY),
                request["module"],
                seed=request["seed"],
                timeout=request["timeout"],
            )
    else:
        report = client.request({"op": "pytest", "world": ctx.world, **request})
        client.changes += 1  # the tests may have changed the learner's names
        if "tampered" in report:
            raise Tampered(str(report["tampered"]))
        if "refused" in report:
            raise wire.WireError(str(report["refused"]))
    tests = _records(report.get("tests"))
    problem = report.get("problem")
    if problem and not tests:
        text = str(problem)
        if text.startswith("pytest is not installed") or text.startswith("pytest found no test"):
            raise AuthoringError(text)
        return Outcome(False, text[:2000], details={"tests": [_problem_row(text)]})
    reported = {t["name"].split("[", 1)[0] for t in tests}
    for name in expected:
        if name not in reported:
            tests.append(
                {"name": name, "outcome": "failed", "message": "no result came back for this test", "line": None}
            )
    rows = [_row(t) for t in tests]
    if problem:
        rows.append(_problem_row(str(problem)))
    failed = [r for r in rows if not r["passed"]]
    summary = f"{len(rows) - len(failed)} of {len(rows)} tests pass"
    return Outcome(not failed, summary, details={"tests": rows})


def _records(value) -> list:
    """The learner's kernel's records, kept only where each is the plain data it should be."""
    out: list = []
    for item in value if isinstance(value, list) else []:
        if len(out) >= MAX_RECORDS:
            break
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        outcome = item.get("outcome")
        line = item.get("line")
        out.append(
            {
                "name": item["name"][:200],
                "outcome": outcome if outcome in ("passed", "failed", "error", "skipped", "timeout") else "failed",
                "message": str(item.get("message") or "")[:2000],
                "line": line if isinstance(line, int) and not isinstance(line, bool) else None,
            }
        )
    return out


def _row(test: dict) -> dict:
    name, outcome = test["name"], test["outcome"]
    message = test["message"].replace("\n", "\n    ")  # pytest's further lines, under the test's
    at = f" (line {test['line']} of the tests)" if test["line"] else ""
    if outcome == "passed":
        text = f"✓ {name} passed"
    elif outcome == "skipped":
        text = f"✓ {name} skipped" + (f": {message}" if message else "")
    elif outcome == "timeout":
        text = f"{name} {message}"
    elif outcome == "error":
        text = f"{name} could not run{at}: {message}"
    else:
        text = f"{name} failed{at}: {message}" if message else f"{name} failed{at}"
    return {"name": name, "outcome": outcome, "passed": outcome not in _FAILING, "message": text}


def _problem_row(text: str) -> dict:
    return {"name": "tests", "outcome": "error", "passed": False, "message": text[:2000]}
