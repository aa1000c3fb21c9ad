#!/usr/bin/env bash
# Fetch, on this machine, the wheels that scripts/gpu_check.sh installs on the GPU machine,
# which has no network: the Jupyter kernel stack, pydantic, fsrs and platformdirs for its
# Python (3.12, x86-64 manylinux; PY_VERSION overrides). torch, numpy, scikit-learn, PyYAML
# and the rest are the machine's own. The wheels land in .whl/ (ignored by git); name it in
# the device run's `carry`.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PY_VERSION:-3.12}
rm -rf .whl
mkdir .whl
platforms=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64; do
    platforms+=(--platform "$p")
done
python3 -m pip download -q --only-binary=:all: --python-version "$py" --implementation cp "${platforms[@]}" -d .whl \
    "jupyter_client>=8.0" "ipykernel>=6.25" "pydantic>=2.5" "fsrs>=5.0" "platformdirs>=3.0"
ls .whl | sed 's/-py.*//; s/-cp.*//' | sort | uniq -d | grep . && { echo "two versions of one package in .whl" >&2; exit 1; }
du -sh .whl
