#!/usr/bin/env bash
# The dependency floors in pyproject.toml, tested: a throwaway venv gets the lowest version
# each `>=` allows (the package's dependencies and the test extra's tools), then the fast
# loop runs in it. torch is the exception: the local CPU wheel goes in first, as in .ci/run.
# The snapshot tests are left out: they compare screens drawn by the textual the test
# extra pins, and an older textual draws them differently on purpose.
#
#   scripts/lowest_deps.sh            # venv in .venv-lowest (kept for a rerun with --no-install)
#   scripts/lowest_deps.sh --no-install
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
VENV=${LOWEST_VENV:-.venv-lowest}

if [[ "${1:-}" != "--no-install" ]]; then
  rm -rf "$VENV"
  "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q torch==2.13.0 packaging 'tomli; python_version < "3.11"'
  # name==floor for every `>=` of the dependencies and the test extra; an exact pin
  # (textual in the test extra, for the snapshots) is dropped so the floor wins.
  "$VENV/bin/python" - > "$VENV/lowest.txt" <<'PYEOF'
import sys
try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib
from packaging.requirements import Requirement

project = tomllib.load(open("pyproject.toml", "rb"))["project"]
wanted = list(project["dependencies"]) + list(project["optional-dependencies"]["test"])
floors = {}
for text in wanted:
    req = Requirement(text)
    # torch: the local wheel. The snapshot plugin and the kernel gateway serve only tests
    # the fast loop leaves out (snapshots; gateway tests start kernels), and the gateway
    # needs a newer jupyter_client than the package does.
    if req.name.lower() in ("torch", "ptfund-tutor", "pytest-textual-snapshot", "jupyter-kernel-gateway"):
        continue
    for spec in req.specifier:
        if spec.operator == ">=":
            floors[req.name] = spec.version
for name, version in sorted(floors.items()):
    print(f"{name}=={version}")
PYEOF
  echo "lowest allowed versions:" && sed 's/^/  /' "$VENV/lowest.txt"
  # The package without its extras (the test extra pins textual), then the floors.
  "$VENV/bin/python" -m pip install -q --no-deps -e .
  "$VENV/bin/python" -m pip install -q -r "$VENV/lowest.txt" -c "$VENV/lowest.txt"
  "$VENV/bin/python" -m pip check
fi

"$VENV/bin/python" -m pytest -q -p no:cacheprovider -m "not slow" --ignore tests/test_app_snapshots.py
