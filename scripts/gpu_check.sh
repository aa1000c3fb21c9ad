#!/usr/bin/env bash
# Prove device detection and the built-in pack on CUDA, on a machine that has a GPU and torch.
#   ptfund-tutor --device cuda doctor     (the kernel reports the GPU's name)
#   ptfund-tutor --device cuda pack test  (every solution, starter, wrong solution, predict key)
# Uses the machine's own python3 and torch. Packages it lacks (jupyter_client, ipykernel,
# pyzmq, pydantic, fsrs, platformdirs, textual, ...) are taken from wheels in .whl/ when that
# folder exists (a machine with no network), else from the package index. Logs go to ${OUT:-/tmp}.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp}
if [ -d .whl ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/ptf-site .whl/*.whl || exit 2
else
    python3 -m pip install -q --target /tmp/ptf-site --no-deps . && python3 -m pip install -q --target /tmp/ptf-site \
        jupyter_client ipykernel pydantic pyyaml fsrs platformdirs textual markdown-it-py packaging || exit 2
fi
export PYTHONPATH="$PWD:/tmp/ptf-site${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
python3 -m tutor --device cuda doctor 2>&1 | tee "$out/doctor.log"
python3 -m tutor --device cuda pack test lessons 2>&1 | tee "$out/packtest-cuda.log"
exit "${PIPESTATUS[0]}"
