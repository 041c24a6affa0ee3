#!/usr/bin/env bash
# The main job on the embedded example: validate the H100/EKS training recipe against a
# SIMULATED cluster (no GPUs needed). The CTRF report is written to out/ctrf.json; the last line
# says where it went (and validate's exit code is the script's).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-env.sh
mkdir -p out
status=0
.venv/bin/aicr-pytest validate \
  --recipe recipes/examples/h100-eks-training.yaml \
  --snapshot recipes/examples/h100-eks-training-snapshot.yaml \
  --simulate h100-eks-training \
  --output out/ctrf.json "$@" || status=$?
if [ -s out/ctrf.json ]; then
  echo "example: CTRF report in $(pwd)/out/ctrf.json (exit $status)" >&2
else
  echo "example: no CTRF report written (exit $status)" >&2
fi
exit "$status"
