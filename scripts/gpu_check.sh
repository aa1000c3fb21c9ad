#!/usr/bin/env bash
# Prove device detection and the built-in pack on CUDA, on a machine that has a GPU and torch.
#   scripts/gpu_check.sh [DEVICE]              DEVICE: cuda (default), or cpu for a rehearsal
#   ptfund-tutor --device cuda doctor     (the kernel reports the GPU's name)
#   ptfund-tutor --device cuda pack test  (every solution, starter, wrong solution, predict key)
# Uses the machine's own python3 and torch. Packages it lacks (jupyter_client, ipykernel,
# pyzmq, pydantic, fsrs, platformdirs, ...) are taken from wheels in .whl/ when that folder
# exists (a machine with no network: scripts/gpu_wheels.sh fetches them here), else from the
# package index. Logs go to ${OUT:-/tmp}.
set -uo pipefail
cd "$(dirname "$0")/.."
device=${1:-cuda}
out=${OUT:-/tmp}
rm -rf /tmp/ptf-site
if [ -d .whl ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/ptf-site .whl/*.whl || exit 2
else
    python3 -m pip install -q --target /tmp/ptf-site --no-deps . && python3 -m pip install -q --target /tmp/ptf-site \
        jupyter_client ipykernel pydantic pyyaml fsrs platformdirs packaging || exit 2
fi
export PYTHONPATH="$PWD:/tmp/ptf-site${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
python3 -m tutor --device "$device" doctor 2>&1 | tee "$out/doctor.log"
python3 -m tutor --device "$device" pack test --no-cache lessons 2>&1 | tee "$out/packtest-$device.log"
exit "${PIPESTATUS[0]}"
