#!/usr/bin/env bash
# Prove the built-in pack and device detection on CUDA, on a machine that has a GPU.
# One short script for a device session: installs into a venv, then
#   doctor --device cuda     (the kernel reports the GPU's name)
#   pack test --device cuda  (every exercise's solution, starter, wrong solutions, predict keys)
# Writes logs under ${OUT:-/tmp}.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp}
python3 -m venv /tmp/ptf-venv && . /tmp/ptf-venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q torch==2.13.0 || python -m pip install -q torch
python -m pip install -q . 2>&1 | tail -2
ptfund-tutor --device cuda doctor 2>&1 | tee "$out/doctor.log"
PYTHONUNBUFFERED=1 ptfund-tutor --device cuda pack test lessons 2>&1 | tee "$out/packtest-cuda.log"
exit "${PIPESTATUS[0]}"
