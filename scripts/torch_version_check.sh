#!/usr/bin/env bash
# Prove the built-in pack against another torch release (on the CPU), e.g. the oldest the
# package supports:
#   scripts/torch_version_check.sh 2.2.2 "numpy<2"      (extra requirements after the version)
# Makes a throwaway virtual environment (python3.12, or $PYTHON) in ${VENV:-/tmp/ptf-torch-VERSION},
# installs that torch first, then this package from the checkout, and runs
# `ptfund-tutor --device cpu pack test --no-cache lessons` (every solution, starter, wrong
# solution and predict-the-output key against that torch). torch wheels are large: minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:?usage: scripts/torch_version_check.sh TORCH_VERSION [EXTRA_REQUIREMENT ...]}
shift
venv=${VENV:-/tmp/ptf-torch-$version}
rm -rf "$venv"
"${PYTHON:-python3.12}" -m venv "$venv"
"$venv/bin/pip" install -q "torch==$version" "$@"
"$venv/bin/pip" install -q -e . "torch==$version" "$@"  # the extras hold here too (numpy<2 stays)
"$venv/bin/python" -c "import torch, numpy; print('torch', torch.__version__, '| numpy', numpy.__version__)"
PTFUND_TUTOR_HOME=$(mktemp -d) "$venv/bin/ptfund-tutor" --device cpu pack test --no-cache lessons
